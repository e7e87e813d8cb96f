//go:build !goredisadapter

// Package goredis runs respire-go's lease locks over go-redis v9: it is a
// conn.Transport whose sessions, fences, tracked reads and replicated
// acquisitions travel on the go-redis client an application already has
// (a standalone *redis.Client, a *redis.ClusterClient, or a *redis.Client
// from redis.NewFailoverClient for Sentinel). It is its own module, so that
// rueidis users never download go-redis, and go-redis users never
// download rueidis' sockets into their process.
//
// # Sessions
//
// A session is one go-redis Conn (Client.EphemeralConn: the socket is
// dropped, never pooled again, when the session ends) used by one
// goroutine at a time. A caller that finds the session idle, and whose
// ctx cannot end (context.Background() and the like), sends its command
// itself: no hand-off between goroutines. Every other caller queues its
// commands, and the session's drainer goroutine writes everything queued
// in one pipeline once the Conn is free and hands each caller its own
// replies. So a late reply can never be handed to another caller
// (go-redis' sticky pool checks for a bad connection before it waits for
// the socket, and a Conn shared by two goroutines can give one of them the
// other's reply with a nil error), and a caller whose ctx can end never
// waits on the socket.
// Identity is learned once, pipelined at open: CLIENT ID and CLIENT INFO's
// addr= (and laddr=, which names the node behind a Sentinel client). A
// fence is CLIENT KILL ID … ADDR … sent on another Conn of the same node.
//
// # What the transport protects against
//
//   - Retries: every command is a Cmder whose NoRetry is true, so neither
//     the client's MaxRetries nor a retried pipeline ever re-sends a lock
//     command, whatever the user's options say.
//   - Hooks: a witness hook is added to every Conn the transport uses,
//     after (inside) the user's hooks. It records what go-redis itself read
//     from the socket before any user hook sees it; the transport reads
//     replies and errors from that record only, so a hook that rewrites an
//     error, fakes a reply or swaps replies cannot change what a lock
//     concludes. A hook that calls next more than once, or with other
//     commands, makes the whole batch uncertain; one that does not call next
//     at all sent nothing (go-redis hooks run next synchronously).
//   - Cancellation: go-redis never watches ctx.Done() during I/O, so a
//     caller never waits on the socket: it waits on its request, and a ctx
//     that ends after the hand-off returns at once, uncertain, while the
//     batch goes on for the others. A tracked read likewise leaves at once
//     (not submitted), and Close ends a watcher's read in flight at once: a
//     watcher's connections are its own private clients', and closing a
//     client closes its sockets (closing a Conn would not).
//
// This package is part of respire-go's implementation: applications use
// New (or lease and coordination on top of NewTransport). Its transport
// API follows conn.Transport and may change with it.
package goredis
