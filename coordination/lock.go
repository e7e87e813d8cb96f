package coordination

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// closeTimeout bounds the release sent by FencedLock.Close.
const closeTimeout = 5 * time.Second

// Attempt is the result of TryAcquire: a held FencedLock, or nothing when
// another owner holds the lease. The zero value is an attempt that did not
// acquire. It is a small value; copies share the lock.
type Attempt struct {
	lock *FencedLock
}

// Acquired reports whether the lock was acquired. It does not block.
func (a Attempt) Acquired() bool { return a.lock != nil }

// Lock returns the acquired lock, or nil when not acquired.
func (a Attempt) Lock() *FencedLock { return a.lock }

// Close closes the lock if it was acquired (see FencedLock.Close) and does
// nothing otherwise.
func (a Attempt) Close() error {
	if a.lock == nil {
		return nil
	}
	return a.lock.Close()
}

// FencedLock is a held lease with its fencing token. Pass FencingToken to
// the protected resource with every write; the resource must reject tokens
// smaller than the largest it accepted (see the package documentation).
//
// Its methods are safe for concurrent use; ResetExpiry and Release are
// applied one at a time, in call order. A FencedLock is returned only when
// acquired; it is never the zero value and must not be copied. Release or
// Close it when done: it has no keep-alive, so it expires after Duration
// unless ResetExpiry renews it.
type FencedLock struct {
	locks        *lease.Locks
	key, counter string
	owner        lease.Token
	fencingToken int64

	turn  chan struct{} // 1-slot semaphore: one ResetExpiry or Release at a time
	state stateCell     // written only while holding turn; read at any time
}

// stateCell holds a lockState behind a mutex (never held across I/O).
type stateCell struct {
	mu sync.Mutex
	s  lockState
}

func (c *stateCell) load() lockState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s
}

func (c *stateCell) store(s lockState) {
	c.mu.Lock()
	c.s = s
	c.mu.Unlock()
}

// lockState is what ResetExpiry and Release change.
type lockState struct {
	duration time.Duration // lease duration applied last
	base     time.Time     // monotonic: just before the acquisition or last confirmed renewal was sent
	released bool          // this handle's release deleted the lease
	lost     bool          // the server said the lease is not ours, or a delete may have run
}

func newFencedLock(locks *lease.Locks, r request, owner lease.Token, token int64, sentAt time.Time) *FencedLock {
	l := &FencedLock{locks: locks, key: r.key, counter: r.counterKey, owner: owner,
		fencingToken: token, turn: make(chan struct{}, 1)}
	l.state.store(lockState{duration: r.ttl, base: sentAt})
	return l
}

// Key returns the lease key as given to the acquisition (without the
// Locks' key prefix). It does not block.
func (l *FencedLock) Key() string { return l.key }

// CounterKey returns the fencing counter key as given to the acquisition
// (without the Locks' key prefix). It does not block.
func (l *FencedLock) CounterKey() string { return l.counter }

// OwnerToken returns the random owner token stored in the lease key
// (32 hexadecimal characters). It is a secret: do not log it. It does not
// block.
func (l *FencedLock) OwnerToken() lease.Token { return l.owner }

// FencingToken returns the token this acquisition received: a positive
// int64, larger than every token handed out earlier from the same counter
// history. It stays the same across renewals. It does not block.
func (l *FencedLock) FencingToken() int64 { return l.fencingToken }

// Duration returns the lease duration: the acquired one (rounded up to
// whole milliseconds), or the one applied by the latest confirmed renewal.
// It does not block.
func (l *FencedLock) Duration() time.Duration { return l.state.load().duration }

// Released reports whether this handle's Release deleted the lease. It does
// not block.
func (l *FencedLock) Released() bool { return l.state.load().released }

// RemainingEstimate is Duration minus the monotonic time elapsed since just
// before the acquisition or the last confirmed renewal was sent, clamped at
// 0, and 0 once the lock is released or known lost. The server's lease can
// only outlive this estimate. It is an estimate, not an ownership check. It
// does not block.
func (l *FencedLock) RemainingEstimate() time.Duration {
	s := l.state.load()
	if s.released || s.lost {
		return 0
	}
	return max(s.duration-time.Since(s.base), 0)
}

// VerifyStillHeld asks the primary whether the lease key still holds this
// lock's owner token (GET, through lease.Locks.OwnerToken). It is a
// point-in-time check that changes nothing; it is no substitute for checking
// the fencing token at the protected resource. It blocks for one round trip;
// ctx cancellation just ends the wait.
func (l *FencedLock) VerifyStillHeld(ctx context.Context) (bool, error) {
	owner, found, err := l.locks.OwnerToken(ctx, l.key)
	if err != nil {
		return false, err
	}
	return found && owner == l.owner, nil
}

// ResetExpiry sets the lease to ttl (rounded up to whole milliseconds) from
// now if this handle still owns it, keeping the fencing token. It returns
// false without sending once the lock is released or known lost; false from
// the server (the lease expired or has another owner) makes the lock lost.
// Do not continue protected writes after false. It blocks for one round
// trip (waiting first for a ResetExpiry or Release in progress, or until
// ctx ends). An error matching conn.ErrOutcomeUnknown means the renewal may
// or may not have applied: the estimate is not extended and the lock stays
// usable. A server error reply leaves the lock unchanged.
func (l *FencedLock) ResetExpiry(ctx context.Context, ttl time.Duration) (bool, error) {
	if err := l.acquireTurn(ctx); err != nil {
		return false, err
	}
	defer l.releaseTurn()
	s := l.state.load()
	if s.released || s.lost {
		return false, nil
	}
	sentAt := time.Now()
	ok, err := l.locks.ResetExpiry(ctx, l.key, l.owner, ttl)
	switch {
	case err != nil:
		return false, err
	case !ok:
		s.lost = true
	default:
		s.duration, s.base = roundUpMillis(ttl), sentAt
	}
	l.state.store(s)
	return ok, nil
}

// Release deletes the lease if this handle still owns it and reports
// lease.Released (this call deleted it), lease.AlreadyReleased (released
// before; nothing sent) or lease.NotOwned (the lease expired or has another
// owner; or the lock was known lost, and nothing was sent). The counter is
// kept: the next owner gets this token + 1. It blocks for the delete's round
// trip (after a ResetExpiry or Release in progress).
//
// If ctx ends before the delete is sent, nothing changed and Release can be
// called again. An error matching conn.ErrOutcomeUnknown means the delete
// may have run: the lock counts as lost (a later Release returns NotOwned)
// and the lease, if still there, expires on its own. A server error reply
// (for example NOPERM) leaves the lock held.
func (l *FencedLock) Release(ctx context.Context) (lease.ReleaseOutcome, error) {
	if err := l.acquireTurn(ctx); err != nil {
		return 0, err
	}
	defer l.releaseTurn()
	s := l.state.load()
	switch {
	case s.released:
		return lease.AlreadyReleased, nil
	case s.lost:
		return lease.NotOwned, nil
	}
	deleted, err := l.locks.Release(ctx, l.key, l.owner)
	switch {
	case errors.Is(err, conn.ErrOutcomeUnknown):
		s.lost = true
	case err != nil:
		return 0, err
	case deleted:
		s.released = true
	default:
		s.lost = true
	}
	l.state.store(s)
	if err != nil {
		return 0, err
	}
	if deleted {
		return lease.Released, nil
	}
	return lease.NotOwned, nil
}

// Close releases the lock (see Release), bounded to five seconds. It
// swallows what expiry makes harmless — connection errors, timeouts, a
// closed Locks, a lock already released or lost — and returns server error
// replies (the lock is then still held). It is idempotent and safe for
// concurrent use.
func (l *FencedLock) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_, err := l.Release(ctx)
	if err != nil && !errors.Is(err, conn.ErrServerReply) {
		return nil
	}
	return err
}

func (l *FencedLock) acquireTurn(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	select {
	case l.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (l *FencedLock) releaseTurn() { <-l.turn }
