package lease

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file runs a Lock's statemachine.Handle. Requests step the handle on
// the caller's goroutine under l.mu and run the command the step starts for
// that caller right there (its ctx governs it). Timer ticks are stepped by
// the Locks' shared timer heap (timers.go), batched renewal completions by
// the renewal sender, and the completions of commands run for other callers
// and fence answers on the goroutine that ran them (a lock has no mailbox
// or goroutine of its own). A step and its effects never block: they only append to
// queues, arm timers, answer reply slots and start goroutines for I/O.

// eventKind says what an asynchronous event reports.
type eventKind uint8

const (
	eventDone  eventKind = iota + 1 // a command completed
	eventFence                      // a fence answered
)

// event is one asynchronous input to a Lock (see handle).
type event struct {
	kind     eventKind
	outcome  sm.Outcome
	unfenced bool
	op       sm.OpID
	err      error
}

// job is a command a step asked the runtime to send, with the Route that
// records which session carries it (for the fence, after any redirect).
type job struct {
	kind  sm.EffectKind
	op    sm.OpID
	ttl   time.Duration
	route *conn.Route
	due   time.Duration // a keep-alive renewal's due time (its timer's); 0 when not timer-driven
}

var jobNone job

var effectBuffers = sync.Pool{New: func() any { b := make([]sm.Effect, 0, 16); return &b }}

// handle steps an asynchronous event: a completion or a fence answer.
func (l *Lock) handle(ev event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ev.kind == eventDone && ev.err != nil && l.keepAlive != nil && errors.Is(ev.err, conn.ErrClientClosed) {
		// Nothing can renew any more: end the keep-alive with its own cause
		// before the renewal's completion would schedule a retry.
		l.clientClosed = true
		l.step(sm.Input{Kind: sm.InputKeepAliveStop, Err: ErrClientClosed, Now: l.m().clock.Now()}, 0)
	}
	if in, ok := l.input(ev); ok {
		l.step(in, 0)
	}
}

// input turns an event into the handle's input; l.mu is held.
func (l *Lock) input(ev event) (sm.Input, bool) {
	now := l.m().clock.Now()
	switch ev.kind {
	case eventDone:
		if s := l.carrierOf(ev.op); s != nil {
			l.renewOn(s.Node()) // after a cluster redirect, renew where the key now lives
		}
		if s := l.carrierOf(ev.op); ev.outcome == sm.OutcomeNotSubmitted || (s != nil && s.Demoted()) {
			l.renewOn("") // the node may be gone (failover): route the next renewal by key
		}
		return sm.Input{Kind: sm.InputCommandDone, Op: ev.op, Outcome: ev.outcome, Err: ev.err,
			Unfenced: ev.unfenced, Now: now}, true
	case eventFence:
		return sm.Input{Kind: sm.InputFenceDone, Op: ev.op, Err: ev.err, Now: now}, true
	}
	return sm.Input{}, false
}

// step applies in and executes its effects; l.mu is held. A command the
// effects start for caller self is returned for the caller to run; commands
// for anyone else start on their own goroutine.
func (l *Lock) step(in sm.Input, self sm.CallerID) job {
	buf := effectBuffers.Get().(*[]sm.Effect)
	effects := l.h.Step(in, (*buf)[:0])
	var due time.Duration // when a renewal this step sends was due (its timer's time)
	if in.Kind == sm.InputTimer && in.Timer == sm.TimerRenewal {
		due = max(l.timers.renewAt, 1) // 0 means unknown
	}
	var mine job
	for i := range effects {
		if j := l.apply(&effects[i], self, due); j.op != 0 {
			mine = j
		}
	}
	if o := l.m().core.obs; o != nil {
		o.effects(l, &in, effects)
	}
	if in.Kind == sm.InputCommandDone {
		l.forgetOp(in.Op)
	}
	if deadline, held := l.h.LeaseDeadline(); held {
		l.leaseDeadline.Store(int64(max(deadline, 1)))
	} else {
		l.leaseDeadline.Store(0)
	}
	clear(effects)
	*buf = effects[:0]
	effectBuffers.Put(buf)
	return mine
}

// apply executes one effect; l.mu is held. due is when a keep-alive renewal
// the effect sends was due (0: unknown).
func (l *Lock) apply(e *sm.Effect, self sm.CallerID, due time.Duration) job {
	switch e.Kind {
	case sm.EffectSendAcquire:
		return job{kind: e.Kind, op: e.Op, ttl: e.TTL, route: l.trackOp(e.Op)}
	case sm.EffectSendRenew, sm.EffectSendRelease:
		j := job{kind: e.Kind, op: e.Op, ttl: e.TTL, route: l.trackOp(e.Op)}
		if e.Kind == sm.EffectSendRenew && e.Caller == 0 {
			j.due = due
		}
		switch {
		case e.Kind == sm.EffectSendRenew && e.Caller == 0 && l.renewer != nil:
			l.renewer.enqueue(renewal{lock: l, op: e.Op, ttl: e.TTL, route: j.route, due: due})
		case e.Kind == sm.EffectSendRenew && e.Caller == 0:
			l.m().inflight.Add() // no known node: routed by key, on its own
			go l.runJob(context.Background(), j)
		case e.Caller == self:
			return j
		default:
			l.m().inflight.Add()
			go l.runJob(l.callerContext(e.Caller), j)
		}
	case sm.EffectCleanupDelete:
		setOn := l.carrierOf(e.Op)
		l.m().goBackground(func() { l.cleanup(setOn) })
	case sm.EffectAbort:
		if r := l.routeOf(e.Op); r != nil {
			r.Abort()
		}
	case sm.EffectFence:
		l.fence(e.Op)
	case sm.EffectCancelKeepAlive:
		if l.keepAlive == ownedKeepAlive {
			l.ownedEnd = e.Ending.Cause
		} else if l.keepAlive != nil {
			l.keepAlive.cancel(endingError(e.Ending))
		}
		l.keepAlive = nil
	case sm.EffectEndLease:
		l.endLease(e.Ending)
	case sm.EffectArmTimer:
		l.m().timers.arm(l.m().clock, l, e.Timer, e.Seq, e.At)
	case sm.EffectDisarmTimer:
		l.m().timers.disarm(l, e.Timer)
	case sm.EffectResolve:
		l.resolve(e.Caller, e.Result)
	}
	return job{}
}

// callerContext is the ctx of a waiting caller; l.mu is held.
func (l *Lock) callerContext(id sm.CallerID) context.Context {
	if i := l.waiterIndex(id); i >= 0 {
		return l.waiters.list[i].ctx
	}
	return context.Background()
}

// runJob runs a command for a caller other than the current goroutine.
// It steps the completion right on this goroutine (not through the
// mailbox), so Locks.Close, which waits for commands in flight, sees the
// fence the completion may start.
func (l *Lock) runJob(ctx context.Context, j job) {
	defer l.m().inflight.Done()
	l.handle(l.execute(ctx, j))
}

// lockCmds is a lock's commands in flight: at most two at once (a
// renewal and a release, or the SET and nothing else), each with the Route
// that records its carrier and may abort it. It lives outside the Lock
// because a held lock is idle almost all the time: a keep-alive lock drops
// it whenever no command is in flight (see forgetOp), which keeps the Lock
// in the 256-byte size class. It is never reused: a sender that still held
// a *conn.Route of a finished command would only see a dead struct.
type lockCmds struct {
	ops    [2]sm.OpID    // the commands in flight (0: a free slot)
	routes [2]conn.Route // the Route of each command in flight (ops[i]'s)
}

// lockWithCmds is a Lock allocated together with its lockCmds: a lock
// without keep-alive keeps them from its SET to its release, so one
// allocation serves both (a TryAcquire+Release pair allocates the Lock and
// its token only).
type lockWithCmds struct {
	lock Lock
	cmds lockCmds
}

// newLock returns a zero Lock for an acquisition: alone with keepAlive (its
// lockCmds come and go with its renewals), with its lockCmds otherwise.
func newLock(keepAlive bool) *Lock {
	if keepAlive {
		return new(Lock)
	}
	lc := new(lockWithCmds)
	lc.lock.cmds = &lc.cmds
	return &lc.lock
}

// trackOp gives op one of the lock's two command slots and returns its
// Route; l.mu is held.
func (l *Lock) trackOp(op sm.OpID) *conn.Route {
	if l.cmds == nil {
		l.cmds = new(lockCmds)
	}
	c := l.cmds
	for i := range c.ops {
		if c.ops[i] == 0 {
			c.ops[i] = op
			c.routes[i].Reset()
			return &c.routes[i]
		}
	}
	panic("lease: a third command in flight on one lock")
}

// routeOf returns op's Route, or nil when op is not in flight; l.mu is held.
func (l *Lock) routeOf(op sm.OpID) *conn.Route {
	if c := l.cmds; c != nil {
		for i := range c.ops {
			if c.ops[i] == op {
				return &c.routes[i]
			}
		}
	}
	return nil
}

// carrierOf returns the session that carried op's last attempt, nil if op
// never reached one; l.mu is held.
func (l *Lock) carrierOf(op sm.OpID) conn.Session {
	if r := l.routeOf(op); r != nil {
		return r.Session()
	}
	return nil
}

// forgetOp frees op's slot once its completion has been stepped; l.mu is
// held. A keep-alive lock then idle drops its lockCmds (the next renewal
// makes a fresh one); a lock without one keeps it for its release, so a
// TryAcquire+Release pair makes one.
func (l *Lock) forgetOp(op sm.OpID) {
	c := l.cmds
	if c == nil {
		return
	}
	for i := range c.ops {
		if c.ops[i] == op {
			c.ops[i] = 0
		}
	}
	if c.ops == [2]sm.OpID{} && l.keepAlive != nil {
		l.cmds = nil
	}
}

// fence kills the session that carried op, from another connection, and
// reports the answer. A command that never reached a session needs no
// fence. Fences of one session are shared (conn.Pool.Fence), so the other
// locks whose commands rode the same socket pay no second kill.
func (l *Lock) fence(op sm.OpID) {
	s := l.carrierOf(op)
	if s == nil {
		// Answered at once, after this step (l.mu is held here).
		l.m().goBackground(func() { l.handle(event{kind: eventFence, op: op}) })
		return
	}
	obs, link := l.m().core.obs, l.acquireSpan
	l.m().goBackground(func() {
		ctx, cancel := l.m().fenceContext()
		defer cancel()
		var span trace.Span
		if obs != nil {
			ctx, span = obs.startFence(ctx, l, link)
		}
		err := l.m().core.pool.Fence(ctx, s)
		if obs != nil {
			obs.fenced(l, span, err) // a failure is logged as a warning there
		}
		// Stepped right here (not through the mailbox), so that once this
		// background work ends — Locks.Close waits for it — the lock has
		// taken the fence's answer.
		l.handle(event{kind: eventFence, op: op, err: err})
	})
}

// cleanup deletes the lock of an abandoned acquisition, bounded, in the
// background, once its SET (carried by setOn) can no longer run after the
// delete (see managed.cleanupDelete).
func (l *Lock) cleanup(setOn conn.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := l.m().cleanupDelete(ctx, setOn, l.wireKey, l.token.wire()); err != nil {
		l.m().core.logger.Debug("lease: cleanup of an abandoned acquisition failed", l.m().core.keyArgs(l.wireKey, "error", err)...)
	}
}

// outcomeOf classifies a command's answer for the handle. A reply proving
// the command did not run and that a later attempt may succeed counts as
// not submitted (a keep-alive retries it while the deadline lasts; a
// release restores Held). A command refused because this Locks was closed
// did not run either, but no retry can succeed: it counts as a definite
// failure, so a keep-alive ends at once.
func outcomeOf(ok bool, err error) sm.Outcome {
	if err == nil {
		if ok {
			return sm.OutcomeOK
		}
		return sm.OutcomeMismatch
	}
	var permErr *PermissionError
	switch {
	case errors.As(err, &permErr):
		return sm.OutcomeDefinite
	case errors.Is(err, conn.ErrDidNotRun):
		return sm.OutcomeNotSubmitted // CLUSTERDOWN, TRYAGAIN, READONLY…: nothing ran, a retry may succeed
	case conn.ClassOf(err) == conn.Definite:
		return sm.OutcomeDefinite
	case conn.ClassOf(err) == conn.NotSubmitted && errors.Is(err, conn.ErrPoolClosed):
		return sm.OutcomeDefinite
	case conn.ClassOf(err) == conn.NotSubmitted:
		return sm.OutcomeNotSubmitted
	}
	return sm.OutcomeUncertain
}

// isRedirect reports a MOVED/ASK answer (the command did not run there).
func isRedirect(err error) bool {
	if err == nil {
		return false
	}
	var e *conn.Error
	return errors.As(err, &e) && e.Redirect != nil
}
