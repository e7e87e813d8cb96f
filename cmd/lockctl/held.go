package main

import (
	"context"
	"time"

	"github.com/respire-go/respire/lease"
)

// heldLock is what run needs of a held lock, plain or fenced: a managed
// lease handle whose Context ends (with the cause) when the lease ends, and
// that is released once CMD has exited.
type heldLock interface {
	Context() context.Context
	Release(ctx context.Context) (lease.ReleaseOutcome, error)
	// State is the lease's state by its local estimate, read now.
	State() lease.State
	// FencingToken is the lock's fencing token, 0 for a plain lock.
	FencingToken() int64
	// Guard makes a guarded write (lease.Lock.Guard; a fencing-token lock
	// checks its fence record too).
	Guard(ctx context.Context, writes ...lease.Write) error
}

// plainLock is a lease.Lock as a heldLock.
type plainLock struct{ *lease.Lock }

// FencingToken is 0: a plain lock has none.
func (plainLock) FencingToken() int64 { return 0 }

// acquireRequest is what run asks for.
type acquireRequest struct {
	key, counter string // counter: the fencing counter key, "" for a plain lock
	ttl, wait    time.Duration
	unfenced     bool   // --unfenced-renewal (an option of the Locks)
	owner        string // --owner: the owner label (lease.WithOwner), "" for none
	// limit > 0 makes key the name of a lease semaphore: the lock is one
	// of its limit permits (--limit).
	limit int
	// once: no keep-alive (guard holds the lock for one write only, and
	// needs no CLIENT permission for renewals).
	once bool
}

// acquireOptions are the lease options of an acquisition: a keep-alive
// (unless once), the wait, and the owner label.
func (r acquireRequest) acquireOptions() []lease.AcquireOption {
	var opts []lease.AcquireOption
	if !r.once {
		opts = append(opts, lease.WithKeepAlive())
	}
	if r.wait > 0 {
		opts = append(opts, lease.WithWait(r.wait))
	}
	if r.owner != "" {
		opts = append(opts, lease.WithOwner(r.owner))
	}
	return opts
}

// acquire takes the lock r describes on locks, with a keep-alive.
func acquire(ctx context.Context, locks *lease.Locks, r acquireRequest) (heldLock, error) {
	if r.counter != "" {
		return acquireFenced(ctx, locks, r)
	}
	if r.limit > 0 {
		lock, err := locks.Semaphore(r.key, r.limit).Acquire(ctx, r.ttl, r.acquireOptions()...)
		if err != nil {
			return nil, err
		}
		return plainLock{lock}, nil
	}
	lock, err := locks.Acquire(ctx, r.key, r.ttl, r.acquireOptions()...)
	if err != nil {
		return nil, err
	}
	return plainLock{lock}, nil
}
