package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leasebridge"
	sm "github.com/respire-go/respire/statemachine"
)

// This file is the managed acquisition of package coordination's
// fencing-token locks, offered through internal/leasebridge rather than
// this package's API: the same handle, runtime and keep-alive as any Lock,
// with conn's fenced script (lease key + persistent counter) as the
// acquisition command instead of SET NX PX.

func init() {
	leasebridge.Register(leasebridge.Fenced[*Locks, *Lock, AcquireOption]{
		Acquire:     acquireFenced,
		Replicas:    withReplicas,
		IsTransport: isTransport,
	})
}

// fencedRequest is one fenced acquisition: the counter's wire key, the WAIT
// asked for, and what the last try learned.
type fencedRequest struct {
	counterKey string
	reply      leasebridge.Reply
}

// replicasOption is WithReplicas(n, timeout) of package coordination.
type replicasOption struct {
	set     bool
	n       int
	timeout time.Duration
}

func withReplicas(n int, timeout time.Duration) AcquireOption {
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
		return fmt.Errorf("%w: WithReplicas(%d, %v) needs n >= 1 and a positive timeout", ErrInvalidOption, r.n, r.timeout)
	}
	return nil
}

// acquireFenced is leasebridge.Fenced.Acquire.
func acquireFenced(ctx context.Context, l *Locks, op, key, counterKey string, ttl time.Duration,
	opts []AcquireOption) (*Lock, leasebridge.Reply, error) {
	o := applyAcquireOptions(opts)
	f := &fencedRequest{counterKey: l.key(counterKey)}
	o.fenced = f
	d, ms, err := validateAcquire(op, key, ttl, o, l.core.drift)
	if err != nil {
		return nil, leasebridge.Reply{}, err
	}
	if err := l.core.pool.CheckFencedKeys(l.key(key), f.counterKey); err != nil {
		return nil, leasebridge.Reply{}, opError(op, key, err)
	}
	if o.replicas.set {
		f.reply.Replicas, f.reply.Timeout = o.replicas.n, time.Duration(ceilMillis(o.replicas.timeout))*time.Millisecond
	}
	var lock *Lock
	if obs := l.core.obs; obs != nil {
		lock, err = obs.acquire(ctx, l, key, d, ms, o)
	} else {
		lock, err = l.acquireChecked(ctx, key, d, ms, o)
	}
	if errors.Is(err, errNotReplicated) {
		return nil, f.reply, nil // the handle ended in acquireChecked; f.reply says how
	}
	if err == nil && lock == nil && op == "Acquire" {
		err = ErrNotAcquired
	}
	if lock == nil {
		return nil, leasebridge.Reply{}, opError(op, key, err)
	}
	return lock, f.reply, nil
}

// errNotReplicated is acquireChecked's answer to a fenced acquisition that
// took the lease but whose WAIT did not confirm it: the handle was ended
// and is not returned (acquireFenced turns it into the Reply's
// NotReplicated; nobody outside this package sees it).
var errNotReplicated = errors.New("lease: fencing counter increment not acknowledged by enough replicas")

// unreturnedReleaseTimeout bounds the release of a handle that is never
// returned (endUnreturned).
const unreturnedReleaseTimeout = 5 * time.Second

// acquireChecked is acquireValid that, for a fenced acquisition whose WAIT
// did not confirm WithReplicas, ends the acquired handle instead of
// returning it (rule UnreturnedHandleEnds) and fails with errNotReplicated.
func (l *Locks) acquireChecked(ctx context.Context, key string, d time.Duration, ms int64,
	o acquireOptions) (*Lock, error) {
	lock, err := l.acquireValid(ctx, key, d, ms, o)
	if lock == nil || o.fenced == nil || !o.fenced.reply.Unconfirmed() {
		return lock, err
	}
	o.fenced.reply.NotReplicated = true
	o.fenced.reply.Released = lock.endUnreturned(ctx)
	return nil, errNotReplicated
}

// endUnreturned ends a handle that its caller never receives (rule
// UnreturnedHandleEnds): like Close, it stops the keep-alive (an owned one,
// WithKeepAlive, included) and then releases the lease, bounded by
// unreturnedReleaseTimeout and whatever ctx's state. Whatever the release's
// outcome — released, refused (NOREPLICAS, NOPERM…), not sent, unknown
// (fenced) — nothing renews the lease afterwards, and a handle still
// counting itself held watches its deadline, so that it ends (and leaves
// the push hub) when its lease estimate runs out instead of staying
// registered for ever. It reports whether the release deleted the lease.
// It blocks for the release.
func (l *Lock) endUnreturned(ctx context.Context) (released bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unreturnedReleaseTimeout)
	defer cancel()
	res, err := l.request(ctx, sm.Input{Kind: sm.InputClose})
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.m().clock.Now()
	if l.h.KeepAliveActive() { // the bound ended before Close could stop it
		l.step(sm.Input{Kind: sm.InputKeepAliveStop, Now: now}, 0)
	}
	if l.ending == nil {
		l.step(sm.Input{Kind: sm.InputWatch, Now: now}, 0)
		l.observeLocked()
	}
	return err == nil && res.Err == nil && res.Release == sm.ReleaseReleased
}

// send runs one try of the fenced acquisition: the script on the lease
// key's session (like SET NX PX), or, with WithReplicas, the script and WAIT
// pipelined on a dedicated connection of their own (WAIT blocks its socket,
// and must follow the script on the script's connection). That connection
// is no session: nothing records it in route, so the clean-up of an
// abandoned try reads and deletes on a fresh session, best effort (the
// dedicated socket was closed, not fenced).
func (f *fencedRequest) send(ctx context.Context, m *managed, wireKey, token string, ms int64,
	route *conn.Route) (conn.Result, error) {
	f.reply.FencingToken, f.reply.Acknowledged, f.reply.WaitErr = 0, 0, nil
	if f.reply.Replicas == 0 {
		res, err := m.acquireOn(ctx, wireKey, conn.FencedAcquireOp(wireKey, f.counterKey, token, ms), route)
		f.reply.FencingToken = res.FencingToken
		return res, err
	}
	if err := m.core.closedErr(); err != nil {
		return conn.Result{}, err
	}
	res, err := conn.AcquireFencedReplicated(ctx, m.core.client, m.core.stop, wireKey, f.counterKey, token, ms,
		int64(f.reply.Replicas), f.reply.Timeout.Milliseconds())
	if err != nil && conn.ClassOf(err) == conn.NotSubmitted && errors.Is(err, conn.ErrWaitStopped) {
		err = m.core.closedErr() // Locks.Close began before the pipeline left: ErrClosed
	}
	f.reply.FencingToken, f.reply.Acknowledged, f.reply.WaitErr = res.FencingToken, res.Acknowledged, res.WaitErr
	return conn.Result{Owned: res.Acquired, FencingToken: res.FencingToken}, err
}

// acquireOutcome classifies an acquisition's answer for the handle, as
// outcomeOf does, except that a malformed fenced reply counts as uncertain:
// the script ran and may have taken the lease, so the handle cleans it up.
func acquireOutcome(ok bool, err error) sm.Outcome {
	if err != nil && errors.Is(err, conn.ErrMalformedFencingToken) {
		return sm.OutcomeUncertain
	}
	return outcomeOf(ok, err)
}

// ceilMillis is d in whole milliseconds, rounded up.
func ceilMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
