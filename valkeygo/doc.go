// Package valkeygo runs respire-go's lease locks over valkey-go
// (github.com/valkey-io/valkey-go, the Valkey project's Go client): New
// returns the lease.Locks of a valkey.Client an application already has —
// standalone, Cluster or Sentinel. It is its own module, so that the lock
// library itself links no Redis client, and its users download no other.
//
// The package is thin: it implements conn.Client, the seam through which
// respire-go's one wire engine (package conn) opens pinned connections — a
// valkey-go dedicated client each — and reads their replies. Sessions,
// fences, redirects, liveness and push are the engine's, the same on every
// client.
//
// What it relies on in valkey-go v1.0.80 (a fork of rueidis; each fact read
// in its source and tested over real sockets in this module): a dedicated
// client pipelines concurrent callers on one socket and never re-sends a
// lock command (none is marked retryable); its Dedicate dials without a
// ctx and hands out a failed connection rather than an error, so Dial
// proves the connection with one PING (ROLE, which must say master, in
// Sentinel mode) and fails instead; after that a command provably never
// written is reported only with ErrDedicatedClientRecycled, which this
// package maps to conn.ErrNotWritten — every other error, ErrClosing
// included, may follow a command that ran; its invalidation hook
// (SetOnInvalidations) reads RESP3 pushes in the background on the
// connection that also carries the watcher's reads; and a closed client
// answers a Receive at once, before it looks at the ctx, without sending
// anything — with ErrClosing, or with the error a failed dial left on its
// connection — which is how Closed learns of a close (it asks with a
// Receive whose ctx is already cancelled, which an open client refuses
// before sending).
package valkeygo
