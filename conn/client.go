package conn

import (
	"context"
	"errors"
	"fmt"
)

// This file is the client seam: the only thing a Redis client library
// supplies to conn's engine. An adapter module (rueidislease over rueidis,
// goredis over go-redis, valkeygo over valkey-go) and sim/dst's simulated
// connections implement it; everything above it — sessions, identity,
// capability memory, fences, redirects, liveness, push watchers, WAIT —
// is the engine's, written once (see Engine).
//
// The seam is small on purpose: open a pinned connection to a node (with
// the client's dialer, TLS, auth and protocol), write a pipeline and read
// its replies in order, receive invalidation pushes, close; plus the one
// fact only the client knows — whether a failed write provably never
// reached the socket (ErrNotWritten) — and the topology the client knows
// (Mode, Nodes). Every safety rule of the library rests on ErrNotWritten
// being returned only when it is true.

// Mode is how a client reaches its servers.
type Mode uint8

// The modes.
const (
	// ModeStandalone: one server takes every key.
	ModeStandalone Mode = iota + 1
	// ModeCluster: keys are routed by hash slot; the engine learns the
	// slots itself (CLUSTER SLOTS, corrected by MOVED) and dials the nodes
	// the cluster names.
	ModeCluster
	// ModeSentinel: one primary takes every key, and Sentinel may switch
	// it to another server; Nodes reports the primary the client knows now.
	ModeSentinel
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModeStandalone:
		return "standalone"
	case ModeCluster:
		return "cluster"
	case ModeSentinel:
		return "sentinel"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Client is a Redis client library as the engine uses it. Implementations
// are safe for concurrent use. The engine never closes the user's client:
// it closes only the connections it dialled.
type Client interface {
	// Name names the client library in error texts ("rueidis",
	// "go-redis", "valkey-go"). It never blocks.
	Name() string

	// Mode reports how the client reaches its servers. It is fixed for
	// the client's life and never blocks.
	Mode() Mode

	// Nodes returns the addresses (host:port) of the nodes the client
	// knows now. Standalone: its one server. Sentinel: the current primary
	// (after a switch the client learned of, the new one). Cluster: nodes
	// to ask CLUSTER SLOTS (any subset of the cluster will do). It is
	// called before every lock command outside cluster mode, so it must be
	// cheap and, once the nodes are known, not block; it may block, bounded
	// by ctx, to learn them the first time (go-redis behind Sentinel). It
	// sends no lock command. Errors are reported as not submitted.
	Nodes(ctx context.Context) ([]string, error)

	// Dial opens a new pinned connection to node — an address from Nodes
	// or one a MOVED/ASK reply named — with the client's dialer, TLS,
	// authentication and protocol, ready for commands. It blocks until the
	// connection is ready, bounded by ctx. The engine sends nothing of its
	// own during Dial, so every Dial error leaves lock commands unsent; an
	// error matching ErrUnknownNode says the client cannot reach that
	// address (yet). In Sentinel mode a Dial that reaches a server other
	// than node (the primary moved) must fail rather than return it.
	Dial(ctx context.Context, node string) (Conn, error)

	// Listen opens a connection to node that receives the server's
	// client-side-tracking invalidations: fn is called with the keys of
	// each invalidation, on the client's reader goroutine, one call at a
	// time, and must not block. fn(nil) means that everything tracked for
	// this listener may have been forgotten: a null invalidation (FLUSHALL,
	// FLUSHDB), or the listener's connection ended — after which fn is
	// never called again. It blocks until the listener is ready, bounded
	// by ctx. See Listener for the two ways a client can listen.
	Listen(ctx context.Context, node string, fn func(keys []string)) (Listener, error)

	// Closed returns nil while the user's client is usable and, once its
	// owner closed it, an error that says so (the engine wraps it in a
	// ClientClosedError naming Name). It is called before every command the
	// engine hands off, so it must not block; it must send no lock command.
	// A client that can learn it only by asking may send a harmless probe
	// through the user's client (rueidis: a PING its closed client refuses
	// at once, sending nothing), rate-limited so that it costs nothing
	// measurable.
	Closed() error
}

// PerCallerWriter is implemented by a Pipelined Conn whose client writes
// concurrent callers' commands one by one as they come: rueidis and
// valkey-go, whose writer flushes whenever its queue is empty, and runs
// next once the caller that readied it parks, so that each caller's command
// costs a write syscall of its own. A session on such a Conn has a drainer
// (drain.go): a caller who finds it idle still sends its own commands, and
// the callers that come while a round trip is on the wire leave together
// in one pipeline when it ends.
type PerCallerWriter interface {
	WritesPerCaller() bool
}

// Leaver is implemented by a Conn that is not Pipelined whose round trip
// can go on after its caller left (go-redis' Conn, whose round trips run
// on a goroutine of the Conn's): a caller whose ctx may be cancelled then
// sends its own commands when the link is idle, with no hand-off to the
// engine's drainer, and still never waits on the socket (rule
// GoRedisCallerNeverWaitsOnTheSocket).
type Leaver interface {
	// DoOrLeave is Do, which also returns once ctx is cancelled (not past
	// its deadline: then it returns as Do does at a deadline) with left
	// true and ctx's cause, the round trip going on without its caller:
	// replies are not touched any more, and ended is called once, on
	// another goroutine, with the round trip's error (nil when every
	// command got its reply) when it ended, or when Close ended it first.
	// ended is never called when left is false.
	DoOrLeave(ctx context.Context, cmds []Command, replies []Reply, ended func(error)) (err error, left bool)
}

// ClientReleaser is implemented by a Client that holds resources of its own
// beyond the user's client (the rueidis adapter's Sentinel subscriptions,
// rule SentinelAnnouncementSwitches): the engine's Close calls Release after
// its last call to the Client. Release must be safe to call more than once.
type ClientReleaser interface {
	Release()
}

// Conn is one pinned connection to one node: the socket that carries a
// session's lock commands, a fence, a watcher's reads, a WAIT. It is never
// redialled behind the engine's back: once it fails it stays failed.
type Conn interface {
	// Do writes cmds as one pipeline and reads one reply per command into
	// replies (len(replies) == len(cmds)), in order. It returns nil when
	// every command got its reply — a server error reply is a reply
	// (ReplyError), never an error of Do. Otherwise it returns the error
	// that left commands without replies: replies[i] with a Kind set were
	// read before it (they are the server's answers), the others are zero.
	//
	// The returned error matches ErrNotWritten only when no byte of the
	// pipeline reached the socket (the connection was known closed before
	// the write, the client refused it first): the commands did not run
	// and the engine may send them again elsewhere. Every other error —
	// timeouts, cancellations, EOF, resets, a socket closed locally, even by
	// the engine's own Close — leaves their outcome unknown: they may have
	// run, or run later from bytes already in a kernel buffer. When in
	// doubt, do not match ErrNotWritten.
	//
	// Do never re-sends a command on its own (no retries, no replay after
	// a reconnect). It must not keep cmds or replies after it returned.
	//
	// Blocking and ctx: on a Pipelined connection Do returns at once when
	// ctx ends (cancelled or past its deadline) with ctx's error, the
	// commands left to their fate; on the others it returns by ctx's
	// deadline at the latest (the client bounds its reads and writes by
	// it) and need not notice a bare cancellation. Every Do the engine
	// makes on a goroutine of its own — a drained batch, a fence, an idle
	// PING, a handshake, a watcher's read, a renewal batch — carries a
	// deadline (on the real clock); a Do made on a caller's goroutine
	// carries the caller's ctx, which may have none.
	Do(ctx context.Context, cmds []Command, replies []Reply) error

	// Pipelined reports whether Do may be called again, from any
	// goroutine, before an earlier Do returned: the client then writes the
	// pipelines in call order, each one's commands together, and reads
	// their replies in the background (rueidis, valkey-go). When false
	// (go-redis' Conn), the engine calls Do from one goroutine at a time
	// and batches the callers' commands into one pipeline itself. Fixed for
	// the connection's life; it never blocks.
	Pipelined() bool

	// Err returns, without blocking or sending, a non-nil error once the
	// connection is known broken (the server closed it, a reset), so that
	// the engine refuses the next command as not submitted instead of
	// writing into a dead socket; nil when it looks alive or the client
	// cannot tell without a command (the engine's idle PING covers that).
	Err() error

	// Close closes the connection for good; later Do calls fail (matching
	// ErrNotWritten). A Do in flight ends promptly — within about a second
	// even when the server or the network stalls — with an error, its
	// commands' outcome unknown (the engine's Close bound rests on it).
	// Close returns once the connection is closed and the client holds no
	// goroutine for it; it may block that long (a client draining replies,
	// about a second at most), never on the server beyond that. The engine
	// calls it on a goroutine of its own, never on a caller's path. It is
	// idempotent and safe for concurrent use.
	Close()
}

// Listener is a connection that receives invalidation pushes (see
// Client.Listen). A client hands them over in one of two ways:
//
//   - RESP3 on the connection itself, read in the background while the
//     connection also carries commands (rueidis, valkey-go): Conn returns
//     the connection, and the engine turns tracking on there (CLIENT
//     TRACKING ON OPTIN NOLOOP) and reads the watched keys on it — one
//     connection per node.
//   - A connection that only listens (go-redis reads a connection only
//     while a command waits): Conn returns nil, ID names the listening
//     connection, and the engine reads the watched keys on a Conn of its
//     own with CLIENT TRACKING ON REDIRECT <ID> OPTIN NOLOOP — two
//     connections per node.
type Listener interface {
	// Conn returns the listening connection as a Conn when it can carry
	// commands while it listens; nil otherwise. It never blocks.
	Conn() Conn
	// ID returns the listening connection's CLIENT ID, the target of a
	// REDIRECT, learned when it opened; 0 when Conn is not nil. It never
	// blocks.
	ID() int64
	// Close closes the listener for good (fn is not called for it), as
	// Conn.Close closes a connection (it may block that long). It is
	// idempotent.
	Close()
}

// The errors of the seam.
var (
	// ErrNotWritten is matched (errors.Is) by a Conn.Do error only when no
	// byte of the pipeline reached the socket: the commands provably did
	// not run. An adapter wraps its client's own error with it, e.g.
	// fmt.Errorf("%w: %w", conn.ErrNotWritten, err).
	ErrNotWritten = errors.New("not written: no byte reached the socket")
	// ErrUnknownNode is matched by a Client.Dial or Client.Listen error
	// when the client cannot reach that address (a node it has not
	// discovered).
	ErrUnknownNode = errors.New("node is not known to the client")
	// ErrPushUnsupported is matched by a Client.Listen error when the
	// client cannot receive invalidation pushes at all: the engine's
	// waiters then poll.
	ErrPushUnsupported = errors.New("the client cannot receive invalidation pushes")
)

// ErrClientClosed is matched by the cause (NotSubmitted) of a command
// refused because the user's client was closed: nothing was sent. The
// cause itself is a *ClientClosedError naming the client. (A rueidis
// client's dedicated sockets would still work after its Close — rueidis
// leaves them open —, but nothing may run once its owner closed it.)
var ErrClientClosed = errors.New("the Redis client was closed")

// ClientClosedError is the cause of a command refused because the user's
// client was closed (Client.Closed): nothing was sent. errors.Is matches
// ErrClientClosed; Unwrap gives the client's own error.
type ClientClosedError struct {
	Client string // Client.Name: "rueidis", "go-redis", …
	Err    error  // what Client.Closed returned
}

// Error names the client, so that a go-redis service never reads
// "rueidis": "the go-redis client was closed". The client's own error
// (which says the same) is left to Unwrap, so the fact is told once.
func (e *ClientClosedError) Error() string {
	return "the " + e.Client + " client was closed"
}

// Is reports whether target is ErrClientClosed.
func (e *ClientClosedError) Is(target error) bool { return target == ErrClientClosed }

// Unwrap returns the client's own error.
func (e *ClientClosedError) Unwrap() error { return e.Err }
