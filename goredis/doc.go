// Package goredis runs respire-go's lease locks over go-redis v9.23 or
// later: New takes the client an application already has — a standalone
// *redis.Client, a *redis.ClusterClient, or the *redis.Client of
// redis.NewFailoverClient — and returns lease.Locks. It is its own module,
// so a go-redis service links no other Redis client.
//
// It is a thin adapter: respire-go's wire engine (package conn) does
// sessions, batching, fences, redirects, liveness, Sentinel switches and
// tracked reads on every client; this package gives it connections of
// your client and keeps go-redis' own facts. Each connection is an
// EphemeralConn (a retired socket never returns to your pool) carrying
// your dialer, TLS, credentials and hooks; every command is a Cmder whose
// NoRetry is true; a witness hook inside yours records what go-redis read,
// so a hook cannot change what a lock concludes; a round trip counts as
// not sent only when go-redis never began writing it; one go-redis would
// not end within a second runs on a goroutine of its own, left at its
// deadline (and, when its caller's ctx can be cancelled, sent from there
// without the engine's batching goroutine when the session is idle: the
// caller leaves it at a cancellation, the round trip going on); invalidation pushes arrive on a private RESP3 listener; behind
// Sentinel, CLIENT INFO's laddr= names the node a connection reached. See
// docs/compatibility.md ("go-redis") for what New needs from your options.
package goredis
