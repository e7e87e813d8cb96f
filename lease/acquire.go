package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/respire-go/respire/actor"
	sm "github.com/respire-go/respire/statemachine"
)

// AcquireOption configures one TryAcquire or Acquire call. Options are
// plain values with no hidden state; reusing one is safe.
type AcquireOption func(*acquireOptions)

type acquireOptions struct {
	keepAlive     bool
	wait          time.Duration
	retryEvery    time.Duration
	retryEverySet bool
	untilDone     bool
	replicas      replicasOption // WithReplicas (fencing-token acquisitions only)
	ownerSuffix   string         // WithOwner's NUL and label ("" for none)
	fair          bool           // WithFairWait (fair.go)
	waiterLease   time.Duration  // WithWaiterLease
	onPosition    func(int)      // WithQueuePosition
	primitive     bool           // a semaphore's or read/write lock's: its queue needs no check of the key
}

// WithKeepAlive starts a keep-alive owned by the lock once acquired: the
// lease is renewed at about half its duration until Release or Close, and
// Lock.Context ends, with the cause, as soon as a renewal cannot confirm
// ownership. The acquisition's ctx does not control it; Close stops it
// before releasing. The CLIENT ID/KILL permission it needs is checked
// before the SET is sent (see WithUnfencedRenewal).
func WithKeepAlive() AcquireOption { return withKeepAlive }

func withKeepAlive(o *acquireOptions) { o.keepAlive = true }

// WithWait keeps trying for up to wait while another owner holds the lock:
// a fresh token per try, a try as soon as the key is deleted, expires or
// changes (push, see WithoutPush) and at the latest every RetryEvery, the
// last sleep cut to the remaining budget and one more try after it.
// Default 0: one try. A negative wait, or one longer than MaxTTL, is
// rejected with ErrInvalidOption before anything is sent.
//
// The wait rides out what a restart, a reset connection or a failover does
// to a try (rule WaitRidesOutTransportErrors): a try that was not sent (a
// dial refused, a session found dead first) or that the server answered
// without running it (LOADING, READONLY, CLUSTERDOWN, MASTERDOWN, TRYAGAIN,
// BUSY, NOREPLICAS, OOM) is followed by the next try, as a refused one is. A
// try whose outcome is unknown (a reset or closed connection, a timeout
// after the send) is settled before the next: the connection that carried
// its SET is fenced (CLIENT KILL), then the key is read on a fresh
// connection; holding the try's token, the lock is acquired, its lease
// counted from the moment before that SET was first sent; otherwise the
// wait goes on (nothing of that SET can run any more). A try that cannot
// be settled (its connection cannot be fenced: no CLIENT ID, or CLIENT
// KILL denied) is abandoned as any uncertain acquisition — its token is
// deleted in the background if it took the key — and the wait goes on. A
// SET reply that came after its lease could have expired is cleaned up
// and the wait goes on. A refusal that every later try would meet ends
// the wait at once with that error: any other server error reply (NOPERM,
// WRONGTYPE, OOM, …), a *PermissionError (WithKeepAlive), the Locks or
// its rueidis client closed. When the budget is spent the call returns
// what the last try gave: not acquired, or that try's error (an unknown
// outcome only when that try could not be settled, or its settling was cut
// off by the budget's end).
// Fencing-token locks (package coordination) are not settled: their
// uncertain try is abandoned and cleaned up, and the wait goes on.
func WithWait(wait time.Duration) AcquireOption {
	return func(o *acquireOptions) { o.wait = wait }
}

// WithWaitUntilDone keeps trying while another owner holds the lock until
// the call's ctx is done, as semaphore.Acquire does: the ctx is the whole
// budget, and the error is then ctx's cause. It overrides WithWait. Failed
// tries are handled as under WithWait (rule WaitRidesOutTransportErrors):
// what did not run, or whose outcome is unknown, is retried (after
// settling it) for as long as ctx lasts, and a refusal every later try
// would meet ends the wait at once with that error.
func WithWaitUntilDone() AcquireOption {
	return func(o *acquireOptions) { o.untilDone = true }
}

// WithRetryEvery sets the mean polling interval of WithWait and
// WithWaitUntilDone. Each sleep is drawn uniformly from [every/2,
// 3·every/2), so contenders that start together spread out. Default 50ms.
// With push (the default where the server allows it) a waiter also tries
// as soon as the key changes, so the interval is only the safety net for a
// lost push: without WithRetryEvery a waiter whose key is tracked sleeps 20
// times the default (about a second) between tries; with it, every.
// Zero, negative or longer than MaxTTL is rejected with ErrInvalidOption
// before anything is sent (rule DurationOptionsBounded).
func WithRetryEvery(every time.Duration) AcquireOption {
	return func(o *acquireOptions) { o.retryEvery, o.retryEverySet = every, true }
}

// Attempt is the result of TryAcquire: a held Lock, or nothing when another
// owner holds the key. The zero value is an attempt that did not acquire.
// It is a small value; copies share the Lock.
type Attempt struct {
	lock *Lock
}

// Acquired reports whether the lock was acquired.
func (a Attempt) Acquired() bool { return a.lock != nil }

// Lock returns the acquired lock, or nil when not acquired.
func (a Attempt) Lock() *Lock { return a.lock }

// Close closes the lock if it was acquired (see Lock.Close) and does
// nothing otherwise.
func (a Attempt) Close() error {
	if a.lock == nil {
		return nil
	}
	return a.lock.Close()
}

// TryAcquire tries to take key with a lease of ttl (rounded up to whole
// milliseconds) under a fresh random owner token: SET key token NX PX ms on
// the node's session, the connection that will also carry the lock's
// renewals and release. When another owner holds it, the attempt is not
// acquired and err is nil (WithWait polls first). It blocks for the round
// trip(s). Validation errors come before anything is sent.
//
// ctx interrupts the reply wait and the polling sleep; the error is then
// ctx's cause. If ctx ends after a SET was sent, no handle is returned even
// if the SET succeeded: a bounded best-effort compare-and-delete of that
// token runs in the background (never delaying the caller), so the orphan
// does not live until expiry. Once acquired, ctx no longer matters.
func (l *Locks) TryAcquire(ctx context.Context, key string, ttl time.Duration, opts ...AcquireOption) (Attempt, error) {
	lock, err := l.acquire(ctx, "TryAcquire", key, ttl, opts)
	return Attempt{lock: lock}, err
}

// Acquire is TryAcquire that returns the lock itself, or an error matching
// ErrNotAcquired when another owner holds it (after the WithWait budget).
func (l *Locks) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...AcquireOption) (*Lock, error) {
	lock, err := l.acquire(ctx, "Acquire", key, ttl, opts)
	if err == nil && lock == nil {
		return nil, opError("Acquire", key, ErrNotAcquired)
	}
	return lock, err
}

func (l *Locks) acquire(ctx context.Context, op, key string, ttl time.Duration, opts []AcquireOption) (*Lock, error) {
	return l.acquireSpec(ctx, op, key, ttl, opts, nil)
}

// acquireSpec validates the acquisition and runs it on the driver, observed
// when telemetry is on; fenced makes it a fencing-token acquisition.
func (l *Locks) acquireSpec(ctx context.Context, op, key string, ttl time.Duration, opts []AcquireOption,
	fenced *actor.Fenced) (*Lock, error) {
	var o acquireOptions
	if len(opts) > 0 {
		o = applyAcquireOptions(opts)
	}
	spec, err := l.spec(op, key, ttl, o, fenced)
	if err != nil {
		return nil, err
	}
	return l.runAcquire(ctx, op, key, spec)
}

// runAcquire runs a validated acquisition on the driver, observed when
// telemetry is on; key names it in errors.
func (l *Locks) runAcquire(ctx context.Context, op, key string, spec actor.AcquireSpec) (*Lock, error) {
	var a *actor.Lock
	var err error
	if obs := l.core.obs; obs != nil {
		a, err = obs.acquire(ctx, l, spec)
	} else {
		a, err = l.core.driver.Acquire(ctx, spec)
	}
	return lockOf(a), opError(op, key, err)
}

// spec validates an acquisition's arguments, before anything is sent, and
// makes the driver's AcquireSpec of them.
func (l *Locks) spec(op, key string, ttl time.Duration, o acquireOptions, fenced *actor.Fenced) (actor.AcquireSpec, error) {
	d, err := validateAcquire(op, key, ttl, o, l.core.driver.Drift())
	if err == nil {
		err = o.replicas.validate(fenced != nil)
	}
	if err != nil {
		return actor.AcquireSpec{}, opError(op, key, err)
	}
	if fenced != nil {
		if err := l.core.transport.CheckFencedKeys(l.key(key), fenced.CounterKey); err != nil {
			return actor.AcquireSpec{}, opError(op, key, err)
		}
	}
	if fenced != nil && o.replicas.set {
		fenced.Replicas, fenced.Timeout = o.replicas.n, time.Duration(ceilMillis(o.replicas.timeout))*time.Millisecond
	}
	mutexKey := l.key(key)
	if o.primitive {
		mutexKey = ""
	}
	fair, err := o.fairSpec(mutexKey, fenced != nil)
	if err != nil {
		return actor.AcquireSpec{}, opError(op, key, err)
	}
	return actor.AcquireSpec{WireKey: l.key(key), KeyStart: len(l.prefix), TTL: d, KeepAlive: o.keepAlive,
		Wait: o.wait, UntilDone: o.untilDone, RetryEvery: o.retryEvery, RetryEverySet: o.retryEverySet,
		Fenced: fenced, OwnerSuffix: o.ownerSuffix, Fair: fair}, nil
}

// applyAcquireOptions is separate so that acquisitions without options do
// not move their options to the heap.
func applyAcquireOptions(opts []AcquireOption) acquireOptions {
	var o acquireOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func validateAcquire(op, key string, ttl time.Duration, o acquireOptions, drift sm.Drift) (time.Duration, error) {
	if key == "" {
		return 0, opError(op, key, ErrEmptyKey)
	}
	d, err := managedTTL(ttl, drift)
	if err != nil {
		return 0, opError(op, key, err)
	}
	if o.wait < 0 || o.wait > MaxTTL {
		return 0, opError(op, key, fmt.Errorf("%w: WithWait(%v): the wait must be from 0 to MaxTTL", ErrInvalidOption, o.wait))
	}
	if o.retryEverySet && (o.retryEvery <= 0 || o.retryEvery > MaxTTL) {
		return 0, opError(op, key, fmt.Errorf("%w: WithRetryEvery(%v): the interval must be above 0 and at most MaxTTL",
			ErrInvalidOption, o.retryEvery))
	}
	if o.ownerSuffix != "" {
		if err := checkOwnerLabel(o.ownerSuffix[len(ownerSeparator):]); err != nil {
			return 0, opError(op, key, err)
		}
	}
	return d, nil
}

// managedTTL normalises the duration of a managed lease (whole milliseconds,
// rounded up) and checks that it outlasts its drift margin: a lease the
// handle would give up before it starts is refused.
func managedTTL(ttl time.Duration, drift sm.Drift) (time.Duration, error) {
	d, err := normalizeTTL(ttl)
	if err != nil {
		return 0, fmt.Errorf("%w (got %v)", err, ttl)
	}
	if margin := drift.Of(d); d <= margin {
		return 0, fmt.Errorf("%w: %v is not longer than the drift margin %v (see WithDriftMargin)", ErrInvalidTTL, ttl, margin)
	}
	return d, nil
}

// acquireFenced is TryAcquire (op "TryAcquire") or Acquire (op "Acquire",
// where a lock held by another owner is an error matching ErrNotAcquired)
// with f's fencing script as every try's command instead of SET NX PX: the
// acquisition package coordination builds fencing-token locks with
// (through internal/leaseinternal.AcquireFenced; f records the fencing
// token the script handed out, and what WithReplicas' WAIT answered). The
// same options, handle, keep-alive and telemetry as any acquisition;
// WithReplicas applies only here.
func (l *Locks) acquireFenced(ctx context.Context, op, key string, ttl time.Duration, f *actor.Fenced,
	opts ...AcquireOption) (*Lock, error) {
	lock, err := l.acquireSpec(ctx, op, key, ttl, opts, f)
	if err == nil && lock == nil && op == "Acquire" && !f.Reply.NotReplicated {
		return nil, opError(op, key, ErrNotAcquired)
	}
	return lock, err
}

// replicasOption is WithReplicas(n, timeout).
type replicasOption struct {
	set     bool
	n       int
	timeout time.Duration
}

// WithReplicas makes a fencing-token acquisition (package coordination,
// which documents it as coordination.WithReplicas) wait, after the script
// took the lease, until n replicas acknowledged it (WAIT n timeout). Other
// acquisitions refuse it with ErrInvalidOption, as they do n < 1 or a
// timeout not in (0, MaxTTL], before anything is sent.
func WithReplicas(n int, timeout time.Duration) AcquireOption {
	return func(o *acquireOptions) { o.replicas = replicasOption{set: true, n: n, timeout: timeout} }
}

// validate refuses WithReplicas on an acquisition that is not fenced, and
// values WAIT cannot take (WAIT 0 does not wait; a 0 timeout blocks
// forever), before anything is sent.
func (r replicasOption) validate(fenced bool) error {
	switch {
	case !r.set:
		return nil
	case !fenced:
		return fmt.Errorf("%w: WithReplicas applies only to fencing-token locks (package coordination)", ErrInvalidOption)
	case r.n < 1 || r.timeout <= 0 || r.timeout > MaxTTL:
		return fmt.Errorf("%w: WithReplicas(%d, %v): it needs n >= 1 and a timeout above 0, at most MaxTTL", ErrInvalidOption, r.n, r.timeout)
	}
	return nil
}

// ceilMillis is d in whole milliseconds, rounded up.
func ceilMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
