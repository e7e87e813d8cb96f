// Package conn is respire-go's wire layer: every command the lock library
// sends is built here, every reply is interpreted here, and one engine
// carries them over whichever Redis client an application uses.
//
// This package is part of respire-go's implementation: applications use
// the lease, coordination and election packages with their client's
// adapter (rueidislease, goredis, valkeygo). Its API may change in any
// release, without notice; it carries no compatibility promise.
//
// It has three parts:
//
//   - The pure protocol (protocol.go, operation.go, primitive*.go,
//     fenced.go): Operation, ScriptCall and FencedAcquire are small state
//     machines for one lock command. Given a connection's capability
//     snapshot (capstore.Set) they yield the next Command; Interpret turns
//     the Reply into the answer, the next fallback step, a redirect or a
//     definite error. No goroutines, no clock, no client types.
//   - The client seam (client.go): Client, Conn and Listener, the only thing
//     a Redis client library supplies — pinned connections that write a
//     pipeline and read its replies in order, invalidation pushes, the
//     topology it knows, and ErrNotWritten, the one fact only the client
//     knows: that a failed write provably never reached the socket.
//   - The engine (engine*.go, link.go, drain.go): Engine implements
//     Transport over a Client. Per node it keeps one session (a pinned
//     connection shared by many locks, with its identity — CLIENT ID and
//     CLIENT INFO's addr= — and capability memory), one fence connection
//     (dialled with the session, never carrying a lock command, so that
//     whatever stalls a session's socket cannot hold up its CLIENT KILL)
//     and, for push, one tracking watcher. It routes keys (a slot map from
//     CLUSTER SLOTS, corrected by MOVED), follows MOVED and ASK, retires a
//     session on READONLY or a Sentinel switch, checks idle sockets with a
//     PING, and, on a connection that does not pipeline, batches its
//     callers' commands on a drainer so that no caller waits on the socket.
//     Its goroutines, timers and waits go through a Clock and a Spawn
//     (runtime.go), so sim/dst runs it on virtual time.
//
// # Errors
//
// Every failure is an *Error with a Class: Definite (a server error reply;
// errors.As to *ServerError, or to the client's own error type when the
// adapter keeps it in Reply.Err, gives the reply), NotSubmitted (provably
// never handed to a socket: ctx already done, session retired or found dead
// before the hand-off, a Route that aborted it, a closed client, or the
// client's ErrNotWritten) or Uncertain (anything after the hand-off:
// timeout, cancellation, EOF, a reset, a socket the engine closed itself).
// errors.Is matches ErrServerReply, ErrNotSubmitted and ErrOutcomeUnknown
// respectively. Uncertain writes are never replayed; NotSubmitted ones
// refused by a dead or retired session are retried once on a fresh one.
//
// # Using it from a managed lock
//
// Session.Do and Engine.Do take a *Route, told the session right before
// every hand-off (again after each redirect); after an Uncertain outcome
// Route.Session names the socket to pass to Engine.Fence, and Route.Abort
// stops a command not yet sent. Engine.Fence shares one CLIENT KILL per
// session among its callers and re-sends it on a fresh fence connection
// when its own fails. Session.ProbeKill checks CLIENT KILL permission with
// the harmless SKIPME form. Session.ExtendMany renews many keys of one
// node in one pipeline.
package conn
