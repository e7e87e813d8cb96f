package coordination

import (
	"context"
	"fmt"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
)

// TryAcquire tries to take key with a lease of ttl (rounded up to whole
// milliseconds) and the next fencing token from counterKey, under a fresh
// random owner token: one atomic script that refuses a held lease (leaving
// the counter alone), increments the counter and takes the lease, sent on
// the key's session like lease's SET NX PX, the connection that then carries
// the lock's renewals and release. When another owner holds the lease, the
// attempt is not acquired and err is nil (lease.WithWait and
// lease.WithWaitUntilDone wait first, with a fresh owner token per try:
// woken by the key's change with push, polling without).
// It blocks for the round trip(s).
//
// The options are lease's — lease.WithKeepAlive, lease.WithWait,
// lease.WithWaitUntilDone, lease.WithRetryEvery — and WithReplicas. Errors
// before anything is sent: an empty key or counterKey (lease.ErrEmptyKey),
// key == counterKey (ErrSameKeys), a bad ttl (lease.ErrInvalidTTL), a bad
// option (lease.ErrInvalidOption), in cluster mode keys in two hash slots
// (lease.ErrCrossSlot), a closed Locks (lease.ErrClosed), a done ctx (its
// cause).
//
// Otherwise it behaves as lease.Locks.TryAcquire: a server error reply (for
// example a counter with a TTL or a value that is not a canonical integer)
// changed nothing; if ctx ends after the script was sent, or its reply is
// lost, the script is never replayed: no lock is returned, the error is
// ctx's cause or matches lease.ErrOutcomeUnknown, and a bounded clean-up
// deletes the lease the script may have taken, in the background (the
// token is spent either way). A reply that comes after the lease could
// have expired gives lease.ErrAcquiredTooLate (cleaned up the same way), a
// malformed reply ErrMalformedFencingToken (idem). With WithReplicas, see
// there. Once acquired, ctx no longer matters. Errors are *OpError, except
// the *NotReplicatedError of WithReplicas.
func (c *Coordinator) TryAcquire(ctx context.Context, key, counterKey string, ttl time.Duration,
	opts ...lease.AcquireOption) (Attempt, error) {
	lock, err := c.acquire(ctx, "TryAcquire", key, counterKey, ttl, opts)
	return Attempt{lock: lock}, err
}

// Acquire is TryAcquire that returns the lock itself, or an error matching
// lease.ErrNotAcquired when another owner holds it (after the wait of
// lease.WithWait or lease.WithWaitUntilDone, if given).
func (c *Coordinator) Acquire(ctx context.Context, key, counterKey string, ttl time.Duration,
	opts ...lease.AcquireOption) (*Lock, error) {
	return c.acquire(ctx, "Acquire", key, counterKey, ttl, opts)
}

func (c *Coordinator) acquire(ctx context.Context, op, key, counterKey string, ttl time.Duration,
	opts []lease.AcquireOption) (*Lock, error) {
	switch {
	case key == "":
		return nil, &OpError{Op: op, Key: key, Err: lease.ErrEmptyKey}
	case counterKey == "":
		return nil, &OpError{Op: op, Key: key, Err: fmt.Errorf("%w (the fencing counter key)", lease.ErrEmptyKey)}
	case key == counterKey:
		return nil, &OpError{Op: op, Key: key, Err: ErrSameKeys}
	}
	f := &actor.Fenced{CounterKey: c.locks.KeyPrefix() + counterKey}
	held, err := leaseinternal.AcquireFenced(c.locks, ctx, op, key, ttl, f, opts...)
	if f.Reply.NotReplicated {
		return nil, notReplicated(key, f)
	}
	if err != nil {
		return nil, err
	}
	if held == nil {
		return nil, nil
	}
	return &Lock{Lock: held, fencingToken: f.Reply.FencingToken, counterKey: counterKey}, nil
}
