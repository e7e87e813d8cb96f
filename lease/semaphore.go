package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
)

// Semaphore is a counting semaphore with leases, shared by every process
// that names it on the same server: at most Limit permits are held at
// once, each a lease of its own with its own owner token. Make it with
// Locks.Semaphore; it is a small immutable value, safe for concurrent use,
// and sends nothing until a call does.
//
// A permit is a *Lock in every way: its Context ends, with the cause, when
// the lease ends for any reason; Release and Close give it back; KeepAlive
// and WithKeepAlive renew it (in the same pipelined batches as the other
// locks' renewals); WithWait and WithWaitUntilDone wait for one (woken by
// the holders' changes where push is on, polling otherwise); a renewal or
// release whose outcome is unknown fences its connection, and an
// acquisition whose outcome is unknown is settled or cleaned up as a
// lock's is; telemetry counts it as a lock.
//
// On the server the semaphore is one sorted set, P{name}:sem (P the view's
// key prefix): member = owner token, score = the server time at which the
// permit's lease ends. Expired permits are removed by the next acquisition
// in the same script, and never counted: a holder that dies (its process
// killed) frees its permit at its lease end by the server's clock, never
// later. The limit is stored in the same sorted set (a reserved member),
// so it cannot vanish while a permit is live; an acquisition with another
// limit, or one that finds live permits without a stored limit, is refused
// with an error matching ErrLimitMismatch, changing nothing. A permit's
// Key is the holders key without the view's prefix, "{name}:sem".
type Semaphore struct {
	locks *Locks
	name  string
	sem   conn.Semaphore
	err   error // a bad name or limit: every call returns it before sending
}

// Semaphore returns the semaphore name of this view with limit permits.
// It sends nothing. A bad name (empty, or one whose keys would not share a
// hash tag) or a limit below 1 or above 2147483647 is not reported here:
// every call on the Semaphore returns it, before anything is sent
// (ErrEmptyKey, ErrInvalidName, ErrInvalidLimit).
func (l *Locks) Semaphore(name string, limit int) *Semaphore {
	sem, err := conn.NewSemaphore(l.prefix, name, limit)
	return &Semaphore{locks: l, name: name, sem: sem, err: nameError(err)}
}

// Name returns the semaphore's name, without the view's prefix. It does
// not block.
func (s *Semaphore) Name() string { return s.name }

// Limit returns the limit the semaphore's acquisitions ask for. It does
// not block.
func (s *Semaphore) Limit() int { return s.sem.Limit }

// TryAcquire tries to take a permit with a lease of ttl (rounded up to
// whole milliseconds) under a fresh random owner token: one script on the
// holders' node that removes the expired permits and adds this one if
// fewer than Limit are live, its lease measured on the server's clock. A
// full semaphore is an attempt that did not acquire, with a nil error
// (WithWait and WithWaitUntilDone wait for a permit first). The options
// and the rest are Locks.TryAcquire's (WithReplicas excepted): ctx, the
// settling or clean-up of a try whose outcome is unknown, validation
// before sending. A semaphore whose live permits use another limit is
// refused at once with an error matching ErrLimitMismatch (errors.As gives
// the *LimitMismatchError), and nothing changes. It blocks for the round
// trip(s); uncontended, an acquisition and its Release are two.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (Attempt, error) {
	lock, err := s.acquire(ctx, "TryAcquire", ttl, opts)
	return Attempt{lock: lock}, err
}

// Acquire is TryAcquire that returns the permit itself, or an error
// matching ErrNotAcquired when the semaphore stayed full (after the wait
// of WithWait or WithWaitUntilDone, if given).
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	lock, err := s.acquire(ctx, "Acquire", ttl, opts)
	if err == nil && lock == nil {
		return nil, opError("Acquire", s.name, ErrNotAcquired)
	}
	return lock, err
}

func (s *Semaphore) acquire(ctx context.Context, op string, ttl time.Duration, opts []AcquireOption) (*Lock, error) {
	if s.err != nil {
		return nil, opError(op, s.name, s.err)
	}
	return s.locks.acquirePrimitive(ctx, op, s.name, ttl, opts, actor.KindPermit, s.sem.HoldersKey, s.sem.Limit)
}

// Holders counts the live permits, by the server's clock (expired ones are
// not counted; nothing is removed). It blocks for one round trip; ctx
// cancellation ends the wait.
func (s *Semaphore) Holders(ctx context.Context) (int, error) {
	if s.err != nil {
		return 0, opError("Holders", s.name, s.err)
	}
	n, err := s.locks.count(ctx, s.sem.HoldersOp())
	return n, opError("Holders", s.name, err)
}

// acquirePrimitive is an acquisition of a permit or a read or write hold:
// the options and ttl are validated as a lock's, then the driver takes
// kind at wireKey (the semaphore's holders key, the lock's readers or
// writer key), limit being a permit's semaphore limit.
func (l *Locks) acquirePrimitive(ctx context.Context, op, name string, ttl time.Duration, opts []AcquireOption,
	kind actor.Kind, wireKey string, limit int) (*Lock, error) {
	var o acquireOptions
	if len(opts) > 0 {
		o = applyAcquireOptions(opts)
	}
	o.primitive = true
	spec, err := l.spec(op, name, ttl, o, nil)
	if err != nil {
		return nil, err
	}
	spec.WireKey, spec.Kind, spec.Limit = wireKey, kind, limit
	return l.runAcquire(ctx, op, name, spec)
}

// count runs a holders count (a semaphore's permits, a lock's readers).
func (l *Locks) count(ctx context.Context, op conn.Op) (int, error) {
	if ctx.Err() != nil {
		return 0, context.Cause(ctx)
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	res, err := l.core.transport.Do(ctx, op, nil)
	return int(res.Holders), err
}

// nameError is the lease error of conn's refusal of a semaphore's or a
// read/write lock's name or limit (nil stays nil).
func nameError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, conn.ErrEmptyName):
		return fmt.Errorf("%w (an empty semaphore or lock name)", ErrEmptyKey)
	case errors.Is(err, conn.ErrBadLimit):
		return fmt.Errorf("%w: it must be at least 1", ErrInvalidLimit)
	case errors.Is(err, conn.ErrEmptyHashTag):
		return fmt.Errorf("%w: it gives an empty hash tag, so its keys could hash to different cluster slots", ErrInvalidName)
	}
	return fmt.Errorf("%w: %w", ErrInvalidName, err)
}
