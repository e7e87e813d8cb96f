// Package conn is respire-go's wire layer: every command the lock library
// sends is built here, and every reply is interpreted here.
//
// This package is part of respire-go's implementation: applications use
// the lease and coordination packages. Its API may change in any release,
// without notice; it carries no compatibility promise.
//
// It has two parts:
//
//   - The pure protocol (protocol.go, operation.go): Operation is a small
//     state machine for one conditional extension or release. Given a
//     session's capability snapshot (capstore.Set) it yields the next
//     Command; Interpret turns the Reply into the answer, the next fallback
//     step, a redirect or a definite error, and reports which capability bits
//     the reply confirmed. It has no rueidis types, goroutines or clock, so
//     the deterministic simulator drives exactly these rules.
//   - The transport (session.go, pool.go, routing.go, fence.go): a Session is
//     one pinned rueidis dedicated socket to one node, shared by many callers
//     (rueidis pipelines), with its identity (CLIENT ID and CLIENT INFO addr=)
//     and its capstore.Store. A Pool keeps the current Session per node, routes
//     keys to nodes (a slot map from CLUSTER SLOTS, updated from MOVED),
//     follows MOVED and ASK (ASKING before every attempt on the ASK target),
//     and fences sessions with CLIENT KILL ID id ADDR addr sent on another
//     connection to the same node.
//
// # Errors
//
// Every failure is an *Error with a Class: Definite (a server error reply;
// errors.As to *rueidis.RedisError gives the reply), NotSubmitted (provably
// never handed to a socket: ctx already done, session retired or found dead
// before the hand-off, a Route that aborted it, rueidis'
// ErrDedicatedClientRecycled, a dial failure) or Uncertain (anything else
// after the hand-off: timeout, cancellation, io.EOF, a reset, and
// rueidis.ErrClosing too — a socket closed locally, by a retired session or
// Pool.Close, answers commands it had already written, even executed, with
// ErrClosing; see ClassifyTransport). errors.Is matches ErrServerReply,
// ErrNotSubmitted and ErrOutcomeUnknown respectively. Uncertain writes are
// never replayed; NotSubmitted ones refused by a dead or retired session are
// retried once per hop on a fresh session by Pool operations.
//
// # Using it from a managed lock
//
// Session.Do and Pool.Do take a *Route, told the session right before every
// hand-off (again after each redirect); after an Uncertain outcome
// Route.Session names the socket to pass to Pool.Fence, and Route.Abort
// stops a command not yet sent. Pool.Fence shares one CLIENT KILL per
// session among its callers and re-sends it when its own connection fails.
// When keep-alive starts, Session.ProbeKill checks CLIENT KILL permission
// with the harmless SKIPME form. Session.ExtendMany renews many keys of one
// node in one pipelined round trip. Sessions are retired after MOVED, ASK,
// READONLY, any non-server error and a fence; Pool.SessionFor then opens a
// fresh one.
package conn
