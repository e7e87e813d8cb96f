// Package rueidislease runs respire-go's lease locks over rueidis
// (github.com/redis/rueidis): New returns the lease.Locks of a
// rueidis.Client an application already has — standalone, Cluster or
// Sentinel (NewSentinel for a Sentinel client: it also follows every
// sentinel's +switch-master). It is its own module, so that the lock library itself links no
// Redis client, and go-redis users never download rueidis.
//
// The package is thin: it implements conn.Client, the seam through which
// respire-go's one wire engine (package conn) opens pinned connections — a
// rueidis dedicated client each — and reads their replies. Sessions,
// fences, redirects, liveness and push are the engine's, the same on every
// client.
//
// What it relies on in rueidis v1.0.79 (each fact tested over real sockets
// in this module): a dedicated client pipelines concurrent callers on one
// socket and never re-sends a lock command (none is marked retryable); it
// reports a command it provably never wrote only with
// ErrDedicatedClientRecycled or a dial failure, which this package maps to
// conn.ErrNotWritten — every other error, ErrClosing included, may follow a
// command that ran; its invalidation hook (SetOnInvalidations) reads RESP3
// pushes in the background on the connection that also carries the
// watcher's reads; and a closed client answers every command at once with
// ErrClosing without sending it, which is how Closed learns of a close.
package rueidislease
