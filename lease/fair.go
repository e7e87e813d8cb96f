package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
)

// DefaultWaiterLease is how long a fair waiter's place in the queue lasts
// without a renewal, unless WithWaiterLease says otherwise: a waiter that
// dies or stops delays the queue by at most this much.
const DefaultWaiterLease = time.Second

// MinWaiterLease is the shortest waiter lease WithWaiterLease accepts: it
// is renewed every third of it.
const MinWaiterLease = 50 * time.Millisecond

// WithFairWait makes the acquisition wait its turn: first come, first
// served. It takes a ticket from the lock's queue on the server (a counter
// there: no client clock is read), holds a short waiter lease of its own
// (DefaultWaiterLease; see WithWaiterLease), renewed in pipelined batches
// while it waits, and is granted the lock only at the head of the queue —
// a semaphore's permit among the first limit − live waiters, a
// read/write lock's holds in ticket order (readers at the head together,
// a writer alone). A grant is a reservation in the lock itself, which
// every acquisition, fair or not, respects; the head claims it with its
// next try, which push starts at once (only the waiters a change may have
// granted are woken, never all of them). A release of a lock acquired
// fairly hands it to the head in the same script, so nothing can take it
// in between.
//
// A waiter that dies or stops (SIGKILL, SIGSTOP, a partition) delays the
// queue by at most its waiter lease: every script drops waiters whose
// waiter lease ended, by the server's clock, and a grant lasts only what
// was left of the grantee's waiter lease — a head that does not claim it
// in time loses its turn (its next try queues it again, at the back).
//
// With WithWait or WithWaitUntilDone the waiter keeps its place for the
// whole wait and leaves the queue when the wait ends without the lock
// (any grant it had goes to the next). Without them the acquisition is a
// single try that never overtakes: it takes the lock only when it is free
// and nobody is queued. WithQueuePosition reports the waiter's place;
// Locks.Waiters, Semaphore.Waiters and RWLock.Waiters count a queue.
//
// A non-fair acquisition of the same lock never waits in the queue and
// never takes a lock reserved for a fair waiter; it takes the lock only
// when it is free. Since every hand-off between fair holders is a
// reservation, it can get ahead of the queue only in the moment after a
// non-fair holder's release (or a lease's expiry) and before a fair
// waiter's script reserves the lock for the head; for a mutex each time
// that happens is counted (Locks.List reports it as Overtaken). Mix the
// two on one lock only when that is acceptable.
//
// On the server the queue is two sorted sets beside the lock, in its hash
// slot: a mutex key K (no hash tag of its own) has {K}:fair:q and
// {K}:fair:l; a key with a hash tag, K:fair:q and K:fair:l; a semaphore's,
// P{name}:sem:fair:q and :fair:l; a read/write lock's, P{name}:w:fair:q and
// :fair:l. A mutex key with a "}" but no hash tag cannot have its queue in
// its slot and is refused with ErrInvalidOption, before anything is sent,
// as are fencing-token locks (package coordination), which do not queue.
func WithFairWait() AcquireOption {
	return func(o *acquireOptions) { o.fair = true }
}

// WithWaiterLease sets a fair waiter's waiter lease (see WithFairWait):
// how long its place lasts without a renewal, which is how long a waiter
// that dies or stops can hold the queue up. It is renewed every third of
// it. Default DefaultWaiterLease. Shorter than MinWaiterLease, or longer
// than MaxTTL, is rejected with ErrInvalidOption before anything is sent;
// without WithFairWait it is ignored.
func WithWaiterLease(d time.Duration) AcquireOption {
	return func(o *acquireOptions) { o.waiterLease = d }
}

// WithQueuePosition has a fair waiter (WithFairWait) tell position its
// place in the queue — 1 is the head — each time a try or a renewal of its
// waiter lease reports a new one. position runs on the library's own
// goroutines and must not block; it is not called once the acquisition
// returned.
func WithQueuePosition(position func(position int)) AcquireOption {
	return func(o *acquireOptions) { o.onPosition = position }
}

// fairSpec validates the fair options and makes the driver's FairSpec of
// them (nil without WithFairWait). wireKey is a mutex's key, "" for a
// semaphore or a read/write lock.
func (o *acquireOptions) fairSpec(wireKey string, fenced bool) (*actor.FairSpec, error) {
	if !o.fair {
		return nil, nil
	}
	if fenced {
		return nil, fmt.Errorf("%w: WithFairWait does not apply to fencing-token locks", ErrInvalidOption)
	}
	lease := o.waiterLease
	if lease == 0 {
		lease = DefaultWaiterLease
	}
	if lease < MinWaiterLease || lease > MaxTTL {
		return nil, fmt.Errorf("%w: waiter lease %v must be in [%v, MaxTTL = %v]", ErrInvalidOption, lease, MinWaiterLease, MaxTTL)
	}
	if wireKey != "" {
		if _, err := conn.FairMutex(wireKey); err != nil {
			return nil, fmt.Errorf("%w: WithFairWait on this key: %w", ErrInvalidOption, err)
		}
	}
	return &actor.FairSpec{WaiterLease: lease, OnPosition: o.onPosition}, nil
}

// Waiters counts the fair waiters queued for key (WithFairWait) whose
// waiter lease has not ended, by the server's clock. It blocks for one
// round trip; ctx ends the wait. Non-fair waiters are not counted: they
// are not queued.
func (l *Locks) Waiters(ctx context.Context, key string) (int, error) {
	if key == "" {
		return 0, opError("Waiters", key, ErrEmptyKey)
	}
	q, err := conn.FairMutexQueue(l.key(key))
	if err != nil {
		return 0, opError("Waiters", key, fmt.Errorf("%w: %w", ErrInvalidOption, err))
	}
	n, err := l.count(ctx, q.WaitersOp())
	return n, opError("Waiters", key, err)
}

// Waiters counts the fair waiters queued for a permit (see
// Locks.Waiters).
func (s *Semaphore) Waiters(ctx context.Context) (int, error) {
	if s.err != nil {
		return 0, opError("Waiters", s.name, s.err)
	}
	n, err := s.locks.count(ctx, s.sem.Queue().WaitersOp())
	return n, opError("Waiters", s.name, err)
}

// Waiters counts the fair waiters queued for a read or the write hold
// (see Locks.Waiters).
func (r *RWLock) Waiters(ctx context.Context) (int, error) {
	if r.err != nil {
		return 0, opError("Waiters", r.name, r.err)
	}
	n, err := r.locks.count(ctx, r.rw.Queue().WaitersOp())
	return n, opError("Waiters", r.name, err)
}
