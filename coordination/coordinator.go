package coordination

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// cleanupTimeout bounds each best-effort release of an unreturned lease.
const cleanupTimeout = time.Second

// Errors of this package, matched with errors.Is. Validation errors also
// match the lease sentinels they refine (lease.ErrEmptyKey,
// lease.ErrInvalidTTL, lease.ErrInvalidOption).
var (
	// ErrNilLocks: New was given a nil *lease.Locks.
	ErrNilLocks = errors.New("coordination: nil lease.Locks")
	// ErrSameKeys: the lock key and the fencing counter key are equal.
	ErrSameKeys = errors.New("coordination: lock and fencing counter keys must differ")
	// ErrClosed: the Coordinator was closed.
	ErrClosed = errors.New("coordination: coordinator closed")
	// ErrMalformedFencingToken: the server's reply was neither nil nor a
	// positive int64 token (a protocol error); the lease was released.
	ErrMalformedFencingToken = conn.ErrMalformedFencingToken
)

// Coordinator hands out fencing-token locks on one rueidis client and one
// lease.Locks view built on that same client. It does not own either: close
// the Coordinator first (it waits for its background cleanups), then the
// Locks, then the client. It is safe for concurrent use. The zero value is
// not usable: create it with New.
type Coordinator struct {
	client rueidis.Client
	locks  *lease.Locks

	mu       sync.Mutex
	closed   bool
	cleanups sync.WaitGroup // background releases of unreturned leases

	// Seams for tests: acquire runs the script (conn.AcquireFenced),
	// acquireReplicated runs it followed by WAIT
	// (conn.AcquireFencedReplicated), afterScript (nil in production) runs
	// once its reply has been parsed, since measures elapsed local time
	// (time.Since).
	acquire           func(ctx context.Context, client rueidis.Client, leaseKey, counterKey, token string, ttlMillis int64) (conn.FencedResult, error)
	acquireReplicated func(ctx context.Context, client rueidis.Client, leaseKey, counterKey, token string, ttlMillis, replicas, waitMillis int64) (conn.ReplicatedFencedResult, error)
	afterScript       func()
	since             func(time.Time) time.Duration
}

// New returns a Coordinator that acquires with client and renews, verifies
// and releases through locks (its key prefix applies to both keys). locks
// must have been created on client. It sends nothing. It fails with
// lease.ErrNilClient or ErrNilLocks.
func New(client rueidis.Client, locks *lease.Locks) (*Coordinator, error) {
	if client == nil {
		return nil, fmt.Errorf("coordination: %w", lease.ErrNilClient)
	}
	if locks == nil {
		return nil, ErrNilLocks
	}
	return &Coordinator{client: client, locks: locks, acquire: conn.AcquireFenced,
		acquireReplicated: conn.AcquireFencedReplicated, since: time.Since}, nil
}

// Close makes later acquisitions fail with ErrClosed and blocks until the
// background releases of leases that acquisitions could not hand out have
// ended (each is bounded to one second); an acquisition still in flight
// then releases such a lease before returning. Locks already returned keep
// working (they use the lease.Locks). It is idempotent and safe for
// concurrent use.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cleanups.Wait()
}

// AcquireOption configures one TryAcquire or Acquire call. Options are plain
// values with no hidden state; reusing one is safe.
type AcquireOption func(*acquireOptions) error

type acquireOptions struct {
	wait, retryEvery time.Duration
	replicas         int           // WithReplicas' n; 0: no WAIT
	replicaTimeout   time.Duration // WithReplicas' timeout, rounded up to whole ms
}

// DefaultRetryEvery is the polling period of WithWait unless WithRetryEvery
// sets another.
const DefaultRetryEvery = 50 * time.Millisecond

// WithWait keeps trying for up to wait while another owner holds the lock:
// a fresh owner token per try, a try every RetryEvery, the last sleep cut to
// the remaining budget and one more try after it. Default 0: one try.
// Negative wait is rejected (lease.ErrInvalidOption) before anything is sent.
func WithWait(wait time.Duration) AcquireOption {
	return func(o *acquireOptions) error {
		if wait < 0 {
			return fmt.Errorf("coordination: WithWait(%v): %w", wait, lease.ErrInvalidOption)
		}
		o.wait = wait
		return nil
	}
}

// WithRetryEvery sets the polling period of WithWait (default
// DefaultRetryEvery). Zero or negative is rejected (lease.ErrInvalidOption)
// before anything is sent.
func WithRetryEvery(every time.Duration) AcquireOption {
	return func(o *acquireOptions) error {
		if every <= 0 {
			return fmt.Errorf("coordination: WithRetryEvery(%v): %w", every, lease.ErrInvalidOption)
		}
		o.retryEvery = every
		return nil
	}
}

// request is one validated acquisition.
type request struct {
	key, counterKey string        // as given (without prefix)
	ttl             time.Duration // rounded up to whole ms
	opts            acquireOptions
}

// validate checks everything that can be checked before sending (F3).
func (c *Coordinator) validate(ctx context.Context, key, counterKey string, ttl time.Duration, opts []AcquireOption) (request, error) {
	if err := ctx.Err(); err != nil {
		return request{}, context.Cause(ctx)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return request{}, ErrClosed
	case key == "" || counterKey == "":
		return request{}, fmt.Errorf("coordination: %w", lease.ErrEmptyKey)
	case key == counterKey:
		return request{}, ErrSameKeys
	case ttl <= 0:
		return request{}, fmt.Errorf("coordination: %w (got %v)", lease.ErrInvalidTTL, ttl)
	}
	r := request{key: key, counterKey: counterKey, ttl: roundUpMillis(ttl),
		opts: acquireOptions{retryEvery: DefaultRetryEvery}}
	for _, opt := range opts {
		if err := opt(&r.opts); err != nil {
			return request{}, err
		}
	}
	return r, nil
}

func roundUpMillis(ttl time.Duration) time.Duration {
	return (ttl + time.Millisecond - 1) / time.Millisecond * time.Millisecond
}

// TryAcquire tries to take key with a lease of ttl (rounded up to whole
// milliseconds) and the next fencing token from counterKey, under a fresh
// random owner token. When another owner holds it the attempt is not
// acquired and err is nil (WithWait polls first). It blocks for the round
// trip(s). Validation errors come before anything is sent: a done ctx (its
// cause), an empty key (lease.ErrEmptyKey), key == counterKey (ErrSameKeys),
// ttl <= 0 (lease.ErrInvalidTTL), a bad option (lease.ErrInvalidOption).
//
// A server error reply (for example an invalid counter) means nothing
// changed. If ctx ends after the script was sent, or its reply is lost, the
// script is never replayed: the error matches conn.ErrOutcomeUnknown (and
// ctx's error when ctx ended) and a bounded best-effort release of the owner
// token runs in the background, so a lease the script may have created does
// not live until its expiry; its fencing token may be spent. If ctx ended
// only once the successful reply was in, the lease is released the same way
// and ctx's cause is returned. If the local estimate had already run out
// when the reply arrived, the lease is released and the attempt is not
// acquired. A malformed reply releases the lease and returns an error
// matching ErrMalformedFencingToken. With WithReplicas, a lease whose WAIT
// reported fewer replicas than required, or failed, is released (waiting
// for the delete, bounded to one second) and the error is a
// *NotReplicatedError matching ErrNotReplicated. Once acquired, ctx no
// longer matters.
func (c *Coordinator) TryAcquire(ctx context.Context, key, counterKey string, ttl time.Duration, opts ...AcquireOption) (Attempt, error) {
	r, err := c.validate(ctx, key, counterKey, ttl, opts)
	if err != nil {
		return Attempt{}, err
	}
	deadline := time.Now().Add(r.opts.wait)
	for {
		attempt, contended, err := c.tryOnce(ctx, r)
		if err != nil || !contended || r.opts.wait == 0 {
			return attempt, err
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return Attempt{}, nil
		}
		if err := sleep(ctx, min(r.opts.retryEvery, remaining)); err != nil {
			return Attempt{}, err
		}
	}
}

// Acquire is TryAcquire that returns the lock itself, or an error matching
// lease.ErrNotAcquired when another owner holds it (after the WithWait
// budget).
func (c *Coordinator) Acquire(ctx context.Context, key, counterKey string, ttl time.Duration, opts ...AcquireOption) (*FencedLock, error) {
	attempt, err := c.TryAcquire(ctx, key, counterKey, ttl, opts...)
	if err != nil {
		return nil, err
	}
	if !attempt.Acquired() {
		return nil, fmt.Errorf("coordination: %s: %w", key, lease.ErrNotAcquired)
	}
	return attempt.Lock(), nil
}

// sleep waits for d or until ctx ends (then its cause).
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
