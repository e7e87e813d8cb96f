package lease

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
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
	replicas      replicasOption // coordination.WithReplicas (see fenced.go)
	fenced        *fencedRequest // set for coordination's fenced acquisitions only
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
// BUSY, NOREPLICAS) is followed by the next try, as a refused one is. A
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
	var o acquireOptions
	if len(opts) > 0 {
		o = applyAcquireOptions(opts)
	}
	d, ms, err := validateAcquire(op, key, ttl, o, l.core.drift)
	if err != nil {
		return nil, err
	}
	if obs := l.core.obs; obs != nil {
		lock, err := obs.acquire(ctx, l, key, d, ms, o)
		return lock, opError(op, key, err)
	}
	lock, err := l.acquireValid(ctx, key, d, ms, o)
	return lock, opError(op, key, err)
}

// acquireValid tries, and polls as the options say, with valid arguments.
func (l *Locks) acquireValid(ctx context.Context, key string, d time.Duration, ms int64, o acquireOptions) (*Lock, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	m := l.managed()
	t := tries{l: l, m: m, key: key, wireKey: l.key(key), ttl: d, ms: ms, o: o}
	if !o.keepAlive {
		// Open the key's session before the lease estimate starts: the dial
		// and handshake of a cold pool must not count against the lease (the
		// estimate still starts before the SET is written). An error here is
		// met again, and reported, by the acquisition itself. (With
		// WithKeepAlive, the renewal permission check of the first try opens
		// it: see tries.one.)
		_, _ = m.sessionFor(ctx, t.wireKey)
	}
	t.poll = sm.Poll{Start: m.clock.Now(), Wait: o.wait, RetryEvery: o.retryEvery, UntilDone: o.untilDone}
	for {
		lock, err := t.one(ctx)
		if lock != nil || (err != nil && !t.ridesOut(ctx, err)) {
			return lock, err
		}
		sleep, again := t.poll.Next(m.clock.Now(), m.jitter())
		if !again {
			return nil, err // the last try's answer: not acquired, or its error
		}
		if m.push != nil {
			return t.pushed(ctx, sleep)
		}
		if err := sleepContext(ctx, m.clock, sleep); err != nil {
			return nil, err
		}
	}
}

// pushed goes on with a waiting acquisition after a try that did not
// acquire, with push (push.go): between tries it waits for the key's
// invalidation, or for the retry interval as a safety net.
func (t *tries) pushed(ctx context.Context, sleep time.Duration) (*Lock, error) {
	m := t.m
	var waiter *pushWaiter
	defer func() { m.push.leave(t.wireKey, waiter) }()
	for {
		if err := m.push.wait(ctx, t.wireKey, sleep, t.o.pushedSleep(t.poll, m.clock.Now(), sleep), &waiter); err != nil {
			return nil, err
		}
		lock, err := t.one(ctx)
		if lock != nil || (err != nil && !t.ridesOut(ctx, err)) {
			return lock, err
		}
		var again bool
		if sleep, again = t.poll.Next(m.clock.Now(), m.jitter()); !again {
			return nil, err
		}
	}
}

// pushSafetyNetFactor is how much longer than the polling sleep a waiter
// parked on a tracked key sleeps when the caller left the retry interval at
// its default: the invalidation wakes it, and the sleep is only the net for
// a push lost on a live watcher, which the servers do not do (a broken
// watcher wakes every waiter itself). 20 × 50 ms: about one try a second.
const pushSafetyNetFactor = 20

// pushedSleep is the sleep of a waiter parked on a tracked key, given the
// polling sleep: the same with WithRetryEvery, else pushSafetyNetFactor
// times it, cut to the remaining budget (one more try follows, as polling).
func (o acquireOptions) pushedSleep(poll sm.Poll, now, sleep time.Duration) time.Duration {
	if o.retryEverySet {
		return sleep
	}
	long := sleep * pushSafetyNetFactor
	if poll.UntilDone {
		return long
	}
	return max(sleep, min(long, poll.Wait-(now-poll.Start)))
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

func validateAcquire(op, key string, ttl time.Duration, o acquireOptions, drift sm.Drift) (time.Duration, int64, error) {
	if key == "" {
		return 0, 0, opError(op, key, ErrEmptyKey)
	}
	d, err := managedTTL(ttl, drift)
	if err != nil {
		return 0, 0, opError(op, key, err)
	}
	if o.wait < 0 || o.wait > MaxTTL {
		return 0, 0, opError(op, key, fmt.Errorf("%w: wait %v must be in [0, MaxTTL = %v]", ErrInvalidOption, o.wait, MaxTTL))
	}
	if o.retryEverySet && (o.retryEvery <= 0 || o.retryEvery > MaxTTL) {
		return 0, 0, opError(op, key, fmt.Errorf("%w: retry interval %v must be in (0, MaxTTL = %v]",
			ErrInvalidOption, o.retryEvery, MaxTTL))
	}
	if err := o.replicas.validate(o.fenced != nil); err != nil {
		return 0, 0, opError(op, key, err)
	}
	return d, int64(d / time.Millisecond), nil
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
		return 0, fmt.Errorf("%w: %v is not longer than its drift margin %v (see WithDriftMargin)", ErrInvalidTTL, ttl, margin)
	}
	return d, nil
}

// tryOnce makes one acquisition with a fresh token: SET NX PX, or the
// fenced script when fenced is set. The Lock and its handle are made once
// the reply is in, and stepped through what happened (InputAcquire at the
// time the SET was about to be sent, then its completion): the core sees
// the same inputs, with the same times, as if the handle had existed all
// along, because nobody else can reach a lock being acquired. A definite
// refusal makes no Lock at all: the core's only answer to it is
// Acquiring -contended-> NotAcquired with the caller told "not acquired"
// (statemachine.TestContentionIsNotAnError_ARefusalNeedsNoHandle), which
// is what returning nil says. Under contention most tries are refusals,
// and their cost is client CPU, that is throughput.
//
// A waiting acquisition passes settle: a SET whose outcome is unknown is
// then settled before any Lock is made (settleSet: its socket fenced, the
// key read on a fresh session). Found holding our token, the SET applied:
// the core is told so, with the lease counted from the timestamp taken
// before that SET was sent, as for any SET that replied OK. Found without
// it, the SET cannot have left anything (the fence answered first), so the
// try is a refusal. Not settled, it is abandoned as without settle.
func (l *Locks) tryOnce(ctx context.Context, m *managed, key string, ttl time.Duration, ms int64, keepAlive bool,
	node string, fenced *fencedRequest, settle settleBudget) (*Lock, error) {
	wireKey, token := l.key(key), NewToken()
	m.inflight.Add() // Locks.Close waits for the SET and the step of its completion
	defer m.inflight.Done()
	sentAt := m.clock.Now()
	route := acquireRoutes.Get().(*conn.Route) // records the SET's carrier; the Lock takes it over
	defer putAcquireRoute(route)
	cmdCtx, cancel := m.commandContext(ctx)
	var sent conn.Result
	var err error
	if fenced == nil {
		sent, err = m.acquireOn(cmdCtx, wireKey, conn.AcquireOp(wireKey, token.wire(), ms), route)
	} else {
		sent, err = fenced.send(cmdCtx, m, wireKey, token.wire(), ms, route)
	}
	cancel()
	outcome := acquireOutcome(sent.Owned, err)
	if outcome == sm.OutcomeUncertain && settle.on && fenced == nil && ctx.Err() == nil {
		switch ours, settled := m.settleSet(ctx, route.Session(), wireKey, token.wire(), settle); {
		case settled && ours:
			outcome, err = sm.OutcomeOK, nil
		case settled:
			return nil, nil
		}
	}
	if outcome == sm.OutcomeMismatch {
		return nil, nil
	}
	lock := newLock(keepAlive)
	lock.locks, lock.wireKey, lock.token = l, wireKey, token
	if keepAlive {
		// Shared, and it keeps no values: holding ctx would keep a
		// request's context (its timer, its values) alive for as long as
		// the lock is held, and nobody can ask for its Context.
		lock.keepAlive = ownedKeepAlive
	}
	lock.renewOn(node)
	lock.mu.Lock()
	id := lock.newCaller(ctx)
	j := lock.step(sm.Input{Kind: sm.InputAcquire, Caller: id, TTL: ttl, KeepAlive: keepAlive,
		Drift: l.core.drift, Now: sentAt}, id)
	j.route.Adopt(route)
	if s := route.Session(); s != nil {
		lock.renewOn(s.Node()) // renewals go where the SET went, after any redirect
	}
	if ctx.Err() != nil && outcome == sm.OutcomeOK {
		// The SET applied but the caller gave up: never return the handle.
		lock.step(sm.Input{Kind: sm.InputCallerCancelled, Caller: id, Now: m.clock.Now()}, id)
	}
	lock.step(sm.Input{Kind: sm.InputCommandDone, Op: j.op, Outcome: outcome, Err: err, Now: m.clock.Now()}, id)
	res, _ := lock.collect(id)
	lock.mu.Unlock()
	switch {
	case res.OK:
		return lock, nil
	case res.Err != nil:
		if ctx.Err() != nil {
			return nil, context.Cause(ctx) // the caller gave up; cleanup runs in the background
		}
		return nil, res.Err
	}
	return nil, nil
}

// acquireRoutes recycles the Routes SETs are sent with (tryOnce): conn
// uses a Route only during the call it is passed to, and the Lock adopts
// the carrier, so the Route is free again once tryOnce returns. A Route
// escapes to the heap (its atomics), and a refused try should allocate
// nothing but its token.
var acquireRoutes = sync.Pool{New: func() any { return new(conn.Route) }}

func putAcquireRoute(r *conn.Route) {
	r.Reset()
	acquireRoutes.Put(r)
}

// acquireOn sends the acquisition op (SET NX PX, or the fenced script) on
// its key's session, the one that carries the lock's release and renewals
// too, once more on a fresh session when the first was found dead before
// the hand-off. It follows redirects; route records every session that
// carries it.
func (m *managed) acquireOn(ctx context.Context, wireKey string, op conn.Op, route *conn.Route) (conn.Result, error) {
	for attempt := 0; ; attempt++ {
		s, err := m.sessionFor(ctx, wireKey)
		if err != nil {
			return conn.Result{}, err
		}
		res, err := m.run(ctx, s, op, route)
		if attempt > 0 || !conn.RetriableOnFreshSession(err) {
			return res, err
		}
	}
}

// sleepContext waits d on clock, or until ctx ends (returning its cause).
func sleepContext(ctx context.Context, clock actor.Clock, d time.Duration) error {
	woken := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(woken) })
	select {
	case <-woken:
		return nil
	case <-ctx.Done():
		t.Stop()
		return context.Cause(ctx)
	}
}
