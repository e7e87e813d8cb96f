package conn

import (
	"context"
	"errors"
)

// Transport is the wire as the lock driver (package actor) uses it:
// sessions — one pinned connection per node, shared by many locks — that
// carry lock operations and batches of renewals; fences that kill a
// session from another connection, after which nothing it carried can
// run; and the tracked reads and invalidations of push. *Engine implements
// it over any conn.Client (the adapters' and sim/dst's). The driver hands a Transport only sessions
// that Transport made.
//
// Errors are *Error values classified Definite, NotSubmitted or Uncertain
// (see Class): the whole safety of a lock rests on NotSubmitted being
// returned only when the command provably never reached a socket.
// Implementations are safe for concurrent use; every method that sends
// blocks until its answer or ctx's end.
type Transport interface {
	// Cluster reports whether keys are routed to nodes by hash slot.
	Cluster() bool
	// SessionForKey returns the current session of the primary that owns
	// key, opening one (and learning its identity) when needed.
	SessionForKey(ctx context.Context, key string) (Session, error)
	// SessionFor returns the current session to node, opening one when
	// needed.
	SessionFor(ctx context.Context, node string) (Session, error)
	// IsPrimary reports, without sending, whether node is still the
	// primary it was when its session opened (false after a Sentinel
	// switch to another node).
	IsPrimary(node string) bool
	// Do runs op on the session of its key's primary, following MOVED and
	// ASK, and once more on a fresh session when the first was found dead
	// before the hand-off; route, when not nil, is told every session
	// before each hand-off and may stop the operation (see Route).
	Do(ctx context.Context, op Op, route *Route) (Result, error)
	// Fence kills session s from another connection to its node (CLIENT
	// KILL ID … ADDR …) and returns once the kill was answered: nothing s
	// carried can run afterwards. s is retired first. Fences of one
	// session are shared. ErrNoIdentity when s cannot be named.
	Fence(ctx context.Context, s Session) error
	// ClientAlive returns an error matching ErrClientClosed once the
	// underlying client was closed; it sends nothing.
	ClientAlive() error
	// WatchRead reads key (GET) on its node's tracking watcher, so that the
	// next change of key is pushed to the invalidation handler.
	WatchRead(ctx context.Context, key string) (node, token string, found bool, err error)
	// WatchReadMany is WatchRead for many keys at once, in out (reused).
	WatchReadMany(ctx context.Context, keys []string, out []WatchReadResult) []WatchReadResult
	// WatchScoreMany is WatchReadMany for sorted-set members (ZSCORE key
	// member): a semaphore's or a read/write lock's holders; Found reports
	// whether the member is in the set.
	WatchScoreMany(ctx context.Context, reads []MemberRead, out []WatchReadResult) []WatchReadResult
	// SetInvalidationHandler sets the function told of changed keys of a
	// node (keys nil: everything tracked there is forgotten). It is called
	// on the transport's own goroutine and must not block.
	SetInvalidationHandler(fn func(node string, keys []string))
	// SetPrimarySwitchHandler sets the function told, on the transport's
	// own task, when a Sentinel client names another primary (old, the
	// one before; now, the new one); every session to another node is
	// demoted and retired by then. It must not block.
	SetPrimarySwitchHandler(fn func(old, now string))
	// CheckFencedKeys refuses, before anything is sent, a lease key and a
	// fencing counter key that would not live in one slot (ErrCrossSlot).
	CheckFencedKeys(leaseKey, counterKey string) error
	// AcquireReplicated runs the fenced acquisition script on a dedicated
	// connection followed by WAIT replicas timeoutMillis, for
	// coordination.WithReplicas; stop ending closes that connection.
	AcquireReplicated(ctx, stop context.Context, leaseKey, counterKey, token string, ttlMillis, replicas,
		timeoutMillis int64) (ReplicatedFencedResult, error)
	// Primaries returns the address of every primary (one outside a
	// cluster), sorted, for a walk of the keyspace (Locks.List).
	Primaries(ctx context.Context) ([]string, error)
	// Scan runs one SCAN cursor MATCH match COUNT count on node, on its
	// fence connection (never a lock session); next is 0 once the walk of
	// node is over. It changes nothing on the server.
	Scan(ctx context.Context, node string, cursor uint64, match string, count int) (next uint64, keys []string, err error)
	// RetireAll retires every session (commands in flight on them become
	// uncertain); the transport stays usable.
	RetireAll()
	// Close closes every session and watcher for good.
	Close()
}

// Session is one pinned connection to one node as the driver sees it:
// capability memory, identity and retirement belong to the physical
// connection. A session is retired after a MOVED, ASK or READONLY reply,
// any non-server error, or a fence; its transport then opens a fresh one.
// Methods are safe for concurrent use.
type Session interface {
	// Node returns the node address (host:port).
	Node() string
	// Retired reports whether the session was closed for good.
	Retired() bool
	// Demoted reports whether its node stopped being the primary.
	Demoted() bool
	// Identity returns CLIENT ID and the peer address CLIENT INFO gave,
	// ok false when they were refused (the session cannot be fenced).
	Identity() (id Identity, ok bool)
	// IdentityError returns the server error that denied the identity.
	IdentityError() error
	// Do runs op on this session only, through its fallback steps; a
	// redirect is returned as a Definite *Error with Redirect set.
	Do(ctx context.Context, op Op, route *Route) (Result, error)
	// ExtendMany renews many keys of this node in one round trip; results
	// in request order.
	ExtendMany(ctx context.Context, requests []ExtendRequest) []ExtendResult
	// ProbeKill checks, harmlessly (CLIENT KILL ID <own id> SKIPME yes),
	// that the user may fence this session.
	ProbeKill(ctx context.Context) error
}

// ErrForeignSession is the error of a *Pool given a session another
// transport made.
var ErrForeignSession = errors.New("the session belongs to another transport")
