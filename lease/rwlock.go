package lease

import (
	"context"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
)

// RWLock is a writer-preferring read/write lock with leases, shared by
// every process that names it on the same server: any number of readers
// (RLock) or one writer (Lock) hold it at once, never both, each holder
// with a lease of its own. Make it with Locks.RWLock; it is a small
// immutable value, safe for concurrent use, and sends nothing until a call
// does.
//
// A read or write hold is a *Lock in every way, as a Semaphore's permit is
// (see there): Context, Release and Close, KeepAlive and WithKeepAlive
// (readers renew in the same pipelined batches as every lock), WithWait and
// WithWaitUntilDone, loss with a cause, fencing, telemetry.
//
// Writer preference: a writer that finds live readers leaves a waiting
// marker, a short lease of its own in the writer key, which refuses every
// new reader; the readers already in keep their holds (and renew them)
// until they leave, and the writer's next try takes the lock once none is
// live. While it waits, every try refreshes the marker (it polls, every
// WithRetryEvery, whatever push does); when it gives up (its wait spent,
// ctx done) it deletes the marker, and a writer that dies while waiting
// holds new readers up only until its marker expires (about three retry
// intervals plus a second). A waiting reader is woken by the writer key's
// change where push is on. So a writer waits at most for the readers that
// were in when it came, not for the ones that keep coming.
//
// There is no upgrade from a read hold to a write hold: two readers
// upgrading at once would each wait for the other to leave, forever (and
// one reader upgrading would wait for its own hold). Release the read
// hold, then Lock. Nor is either reentrant: a second RLock of the same
// process is another reader, and Lock while holding RLock waits for that
// read hold like any other.
//
// On the server: P{name}:w (the writer's token, or "waiting:" and the
// waiting writer's token) and P{name}:r (a sorted set: reader token →
// lease end, on the server's clock), P the view's key prefix; both carry
// the hash tag {name}, so they live in one cluster slot. A read hold's Key
// is "{name}:r", a write hold's "{name}:w" (without the view's prefix).
type RWLock struct {
	locks *Locks
	name  string
	rw    conn.RWLock
	err   error // a bad name: every call returns it before sending
}

// RWLock returns the read/write lock name of this view. It sends nothing.
// A bad name (empty, or one whose keys would not share a hash tag) is not
// reported here: every call on the RWLock returns it, before anything is
// sent (ErrEmptyKey, ErrInvalidName).
func (l *Locks) RWLock(name string) *RWLock {
	rw, err := conn.NewRWLock(l.prefix, name)
	return &RWLock{locks: l, name: name, rw: rw, err: nameError(err)}
}

// Name returns the lock's name, without the view's prefix. It does not
// block.
func (r *RWLock) Name() string { return r.name }

// TryRLock tries to take a read hold with a lease of ttl (rounded up to
// whole milliseconds) under a fresh random owner token: one script that
// refuses while a writer holds the lock or waits for it, and otherwise adds
// this reader, its lease measured on the server's clock. Refused, the
// attempt did not acquire and the error is nil (WithWait and
// WithWaitUntilDone wait first). The options and the rest are
// Locks.TryAcquire's (WithReplicas excepted). It blocks for the round
// trip(s).
func (r *RWLock) TryRLock(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (Attempt, error) {
	lock, err := r.acquire(ctx, "TryRLock", ttl, opts, actor.KindRead)
	return Attempt{lock: lock}, err
}

// RLock is TryRLock that returns the read hold itself, or an error
// matching ErrNotAcquired when a writer held or awaited the lock for the
// whole wait.
func (r *RWLock) RLock(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return r.must(ctx, "RLock", ttl, opts, actor.KindRead)
}

// TryLock tries to take the write hold with a lease of ttl (rounded up to
// whole milliseconds) under a fresh random owner token. With live readers
// it sets its waiting marker (see RWLock) and, given WithWait or
// WithWaitUntilDone, tries again every retry interval with the same token,
// refreshing the marker, until the readers are gone; refused at the end
// (readers, or another writer, for the whole wait), the attempt did not
// acquire, the error is nil, and its marker is deleted in the background.
// The options and the rest are Locks.TryAcquire's (WithReplicas excepted).
// It blocks for the round trip(s).
func (r *RWLock) TryLock(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (Attempt, error) {
	lock, err := r.acquire(ctx, "TryLock", ttl, opts, actor.KindWrite)
	return Attempt{lock: lock}, err
}

// Lock is TryLock that returns the write hold itself, or an error matching
// ErrNotAcquired when readers or another writer held the lock for the
// whole wait.
func (r *RWLock) Lock(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	return r.must(ctx, "Lock", ttl, opts, actor.KindWrite)
}

// Readers counts the live read holds, by the server's clock. It blocks for
// one round trip; ctx cancellation ends the wait.
func (r *RWLock) Readers(ctx context.Context) (int, error) {
	if r.err != nil {
		return 0, opError("Readers", r.name, r.err)
	}
	n, err := r.locks.count(ctx, r.rw.ReadersOp())
	return n, opError("Readers", r.name, err)
}

func (r *RWLock) acquire(ctx context.Context, op string, ttl time.Duration, opts []AcquireOption, kind actor.Kind) (*Lock, error) {
	if r.err != nil {
		return nil, opError(op, r.name, r.err)
	}
	key := r.rw.ReadersKey
	if kind == actor.KindWrite {
		key = r.rw.WriterKey
	}
	return r.locks.acquirePrimitive(ctx, op, r.name, ttl, opts, kind, key, 0)
}

// must is an acquisition whose refusal is an error, ErrNotAcquired (RLock,
// Lock).
func (r *RWLock) must(ctx context.Context, op string, ttl time.Duration, opts []AcquireOption, kind actor.Kind) (*Lock, error) {
	lock, err := r.acquire(ctx, op, ttl, opts, kind)
	if err == nil && lock == nil {
		return nil, opError(op, r.name, ErrNotAcquired)
	}
	return lock, err
}
