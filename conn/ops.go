package conn

import (
	"context"
	"errors"
)

// opKind names the lock operation an Op runs.
type opKind uint8

const (
	opAcquire opKind = iota + 1
	opExtend
	opRelease
	opOwner
	opFenced
	opPrimitive // a semaphore or read/write-lock script (primitive_keys.go)
)

// Op is one lock operation to run with Session.Do or Pool.Do: build it with
// AcquireOp, FencedAcquireOp, ExtendOp, ReleaseOp or OwnerOp, or with the
// methods of Semaphore and RWLock. Keys are wire keys (any prefix already
// applied). It is a small value; copies are independent.
type Op struct {
	kind      opKind
	key       string
	counter   string // FencedAcquireOp only: the fencing counter key
	token     string
	ttlMillis int64
	prim      *primitiveCall // opPrimitive only (immutable, shared by copies)
}

// AcquireOp is SET key token NX PX ttlMillis (Result.Owned = acquired).
func AcquireOp(key, token string, ttlMillis int64) Op {
	return Op{kind: opAcquire, key: key, token: token, ttlMillis: ttlMillis}
}

// ExtendOp is a compare-and-pexpire of key for token to ttlMillis from now:
// SET IFEQ PX, or the Lua script where the session has learned that
// conditional SET is unsupported.
func ExtendOp(key, token string, ttlMillis int64) Op {
	return Op{kind: opExtend, key: key, token: token, ttlMillis: ttlMillis}
}

// ReleaseOp is a compare-and-delete of key for token: DELEX, DELIFEQ or Lua,
// as the session's capabilities allow.
func ReleaseOp(key, token string) Op { return Op{kind: opRelease, key: key, token: token} }

// OwnerOp is GET key (Result.Owned = found, Result.Token = the owner token).
func OwnerOp(key string) Op { return Op{kind: opOwner, key: key} }

// name is the Op field of the *Error values this operation returns.
func (o Op) name() string {
	if o.kind == opPrimitive {
		return o.prim.name
	}
	return [...]string{"", "acquire", "extend", "release", "owner", fencedOp}[o.kind]
}

// ExtendRequest is one renewal in a pipelined batch. Route, when not nil, is
// told the session before the batch is handed off and may drop this request
// from it (NotSubmitted, ErrAborted).
type ExtendRequest struct {
	Key       string
	Token     string
	TTLMillis int64
	// Op, when set, is the renewal sent instead of the compare-and-pexpire
	// of Key for Token (Key, Token and TTLMillis are then unused): a
	// semaphore permit's (Semaphore.RenewOp), a read hold's
	// (RWLock.ReadRenewOp) or any ExtendOp. It goes in the same pipeline as
	// the batch's other renewals. Any other Op is refused, NotSubmitted
	// (ErrNotBatchable). The zero Op is unset.
	Op    Op
	Route *Route
}

// ErrNotBatchable is the NotSubmitted cause of an ExtendRequest whose Op is
// not a renewal (an acquisition, a release, a read).
var ErrNotBatchable = errors.New("not a renewal: it cannot ride in a batch of renewals")

// Renewal returns the Op the request sends: Op when set, else
// ExtendOp(Key, Token, TTLMillis). Use it to send the request again on its
// own (after a redirect).
func (r ExtendRequest) Renewal() Op {
	if r.Op.kind != 0 {
		return r.Op
	}
	return ExtendOp(r.Key, r.Token, r.TTLMillis)
}

// Batchable reports whether an Op may ride in a batch of renewals (see
// ExtendRequest.Op).
func (o Op) Batchable() bool {
	return o.kind == 0 || o.kind == opExtend || (o.kind == opPrimitive &&
		(o.prim.kind == primOwned && o.prim.sha == HolderRenewScriptSHA || o.prim.kind == primFairRenew))
}

// ExtendResult is the answer to one ExtendRequest.
type ExtendResult struct {
	Result
	Err error // *Error, classified as for Extend (or as the request's Op)
}

// maxRedirects bounds how many MOVED/ASK hops one operation follows.
const maxRedirects = 5

// Result is the answer of a conditional operation and the session that
// executed its last attempt (the one to fence after an uncertain outcome).
type Result struct {
	Owned        bool    // true: released/extended/found/acquired; false: not owner, expired, missing or contended
	Token        string  // Owner only: the owner token bytes when Owned
	FencingToken int64   // FencedAcquireOp only: the fencing token when Owned
	Session      Session // session of the last attempt; nil when nothing was sent

	// Semaphore and read/write-lock Ops only (primitive_keys.go):
	Waiting         bool  // RWLock.WriteAcquireOp: not acquired; the token's waiting marker refuses new readers (fair Ops: see FairResource; HandOverOp: the next owner holds the key)
	RemainingMillis int64 // lease reads: a live holder's lease left (server ms) when Owned
	Holders         int64 // HoldersOp, ReadersOp: the live holders; fair Ops: the waiters, or a waiter's position

	// Unconfirmed, when not nil: an acquisition a Sentinel client's
	// primary answered Owned that fewer replicas acknowledged than the node
	// has had (rule SentinelAcquisitionsNeedReplicaAcks), and why: it
	// matches ErrNotReplicated (a *ReplicaCheckRefusedError when the ACL
	// refused the check). The key (permit, hold) is there, on that node,
	// but a promoted replica may lack it: the caller must end it
	// (owner-compared) and never hand it out as acquired.
	Unconfirmed error
}

// RetriableOnFreshSession reports an error of a command that provably never
// reached its socket because the session was retired or found dead first: a
// fresh session may send it.
func RetriableOnFreshSession(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	return errors.As(err, &e) && e.Class == NotSubmitted && errors.Is(e.Err, ErrSessionRetired)
}

// Identity is how the server names a session's connection, learned once
// when the session opens: CLIENT ID and the peer address from CLIENT INFO.
type Identity struct {
	ID   int64  // CLIENT ID
	Addr string // addr= field of CLIENT INFO (the client side as the server sees it)
}

// cancelledByCaller reports that rueidis gave up waiting for a reply because
// the caller's ctx ended. That says nothing about the socket: in background
// mode (the only mode a cancellable ctx reaches, see sendContext) rueidis
// still reads the late reply and drops it, and the session stays in use for
// its other callers. (The command's uncertainty is settled by the caller: a
// managed lock fences the session, which retires it.)
func cancelledByCaller(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// invalid returns the NotSubmitted *Error of a primitive Op built from bad
// input (nothing may be sent for it), and nil for every other Op.
func (o Op) invalid() error {
	if o.kind != opPrimitive || o.prim.invalid == nil {
		return nil
	}
	return &Error{Class: NotSubmitted, Op: o.prim.name, Err: o.prim.invalid}
}
