// Package goredis runs respire-go's lease locks over go-redis v9 (v9.23 or
// later): New takes the go-redis client an application already has — a
// standalone *redis.Client, a *redis.ClusterClient, or the *redis.Client
// of redis.NewFailoverClient for Sentinel — and returns lease.Locks. It is
// its own module, so that go-redis users link no other Redis client.
//
// The package is a thin adapter: it gives respire-go's wire engine (conn)
// pinned connections of your client, and everything above them — sessions
// shared by many locks, batching, fences, redirects, liveness checks,
// Sentinel switches, tracked reads — is the engine's, the same on every
// client. What it keeps are go-redis' own facts:
//
//   - Connections: each is a Client.EphemeralConn of your client (or of a
//     cluster's node client), so your dialer, TLS, credentials and hooks
//     carry the lock commands, and a retired socket is dropped, never
//     handed to your code again from the pool.
//   - Retries: every command is a Cmder whose NoRetry is true, so go-redis
//     never re-sends a lock command, whatever MaxRetries says.
//   - Hooks: a witness hook inside yours records what go-redis itself read
//     from the socket; a hook that rewrites a reply or an error cannot
//     change what a lock concludes, one that calls next twice makes the
//     outcome unknown, and one that does not call next sent nothing.
//   - Not sent: a round trip counts as not sent only when go-redis never
//     began writing its first command into the connection's buffer (the
//     name is handed to go-redis as an encoding.BinaryMarshaler that
//     records it): whatever the error, nothing of it reached the socket.
//   - Deadlines: go-redis interrupts I/O only by a deadline (a ctx's, with
//     ContextTimeoutEnabled, or its ReadTimeout and WriteTimeout), so a
//     round trip it would not end within a second runs on a goroutine of
//     its own, which the engine leaves at its deadline or when it closes
//     the connection.
//   - Push: go-redis reads a connection only while a command waits, so the
//     invalidations of tracked keys arrive on a listener, the one
//     connection of a private RESP3 client built from your client's
//     options, kept in a blocking read; the engine reads the keys on a
//     connection of its own with CLIENT TRACKING ... REDIRECT to it.
//   - Sentinel: the node a connection reached is CLIENT INFO's laddr=;
//     go-redis' FailoverClient closes the connections to the old master
//     when it learns of a switch, and the next one names the new master.
//
// See docs/compatibility.md ("go-redis") for what New needs from your
// client's options and how many connections it opens.
package goredis
