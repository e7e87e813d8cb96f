package actor

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file steps a Lock's statemachine.Handle and carries out its effects.
// Requests step the handle on the caller's goroutine under l.mu and run the
// command the step starts for that caller right there (its ctx governs
// it). Timer ticks are stepped by the driver's timer heap (timers.go),
// batched renewal completions by the renewal sender, and the completions of
// commands run for other callers and fence answers on the goroutine that
// ran them (a lock has no mailbox or goroutine of its own). A step and its
// effects never block: they only append to queues, arm timers, answer
// waiting callers and start work through the driver's Spawn.

// eventKind says what an asynchronous event reports.
type eventKind uint8

const (
	eventDone    eventKind = iota + 1 // a command completed
	eventFence                        // a fence answered
	eventSettled                      // the settling of an uncertain SET answered
)

// event is one asynchronous input to a Lock (see handle).
type event struct {
	kind     eventKind
	outcome  sm.Outcome
	unfenced bool
	op       sm.OpID
	err      error
}

// job is a command a step asked the driver to send, with the Route that
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
	if ev.kind == eventDone && ev.err != nil && l.keepAliveRunning() != nil && errors.Is(ev.err, conn.ErrClientClosed) {
		// Nothing can renew any more: end the keep-alive with its own cause
		// before the renewal's completion would schedule a retry.
		l.flags.set(flagClientClosed, true)
		l.step(sm.Input{Kind: sm.InputKeepAliveStop, Err: clientClosedCause(ev.err), Now: l.d.clock.Now()}, 0)
	}
	if in, ok := l.input(ev); ok {
		l.step(in, 0)
	}
}

// clientClosedCause is the *conn.ClientClosedError in err (it names the
// client), or conn.ErrClientClosed.
func clientClosedCause(err error) error {
	var closed *conn.ClientClosedError
	if errors.As(err, &closed) {
		return closed
	}
	return conn.ErrClientClosed
}

// input turns an event into the handle's input; l.mu is held.
func (l *Lock) input(ev event) (sm.Input, bool) {
	now := l.d.clock.Now()
	switch ev.kind {
	case eventDone:
		if s := l.carrierOf(ev.op); s != nil {
			l.renewOn(s.Node()) // after a cluster redirect, renew where the key now lives
		}
		if s := l.carrierOf(ev.op); ev.outcome == sm.OutcomeNotSubmitted || (s != nil && s.Demoted()) {
			l.renewOn("") // the node may be gone (failover): route the next renewal by key
		}
		outcome, err := demotedReply(l.carrierOf(ev.op), ev.outcome, ev.err)
		return sm.Input{Kind: sm.InputCommandDone, Op: ev.op, Outcome: outcome, Err: err,
			Unfenced: ev.unfenced, Now: now}, true
	case eventFence:
		return sm.Input{Kind: sm.InputFenceDone, Op: ev.op, Err: ev.err, Now: now}, true
	case eventSettled:
		return sm.Input{Kind: sm.InputAcquireSettled, Op: ev.op, Outcome: ev.outcome, Now: now}, true
	}
	return sm.Input{}, false
}

// step applies in and executes its effects; l.mu is held. A command the
// effects start for caller self is returned for the caller to run; commands
// for anyone else start through the driver's Spawn.
func (l *Lock) step(in sm.Input, self sm.CallerID) job {
	buf := effectBuffers.Get().(*[]sm.Effect)
	mine := l.stepWith(in, self, buf)
	effectBuffers.Put(buf)
	return mine
}

// stepWith is step with the effects in *buf, which it leaves empty (its
// capacity grown as needed); l.mu is held.
func (l *Lock) stepWith(in sm.Input, self sm.CallerID, buf *[]sm.Effect) job {
	in.Drift = &l.d.drift // every input: the handle keeps none (sm.Input.Drift)
	effects := l.h.Step(in, (*buf)[:0])
	var due time.Duration // when a renewal this step sends was due (its timer's time)
	if in.Kind == sm.InputTimer && in.Timer == sm.TimerRenewal {
		due = max(l.timers.renewAt, 1) // 0 means unknown
	}
	completed := in.Kind == sm.InputCommandDone || in.Kind == sm.InputAcquireSettled
	early := completed && !namesOp(effects, in.Op)
	if early {
		// Nothing of this step needs the completed command's slot (no fence,
		// abort, settling or clean-up of it): free it first, for the
		// commands the step may start — a recovery's confirmation sends a
		// waiting reset's renewal and a deferred release at once.
		l.forgetOp(in.Op)
	}
	var mine job
	for i := range effects {
		if j := l.apply(&effects[i], self, due); j.op != 0 {
			mine = j
		}
	}
	settling := mine.kind == sm.EffectSettleAcquire // the SET's op goes on: its Route names the socket to fence
	if o := l.d.obs; o != nil {
		o.Stepped(l, in, effects)
	}
	if early || (in.Kind == sm.InputCommandDone && !settling) || in.Kind == sm.InputAcquireSettled {
		// Again when freed early (op ids are never reused, so this only
		// frees nothing twice): the step may have ended the lease, and the
		// lock's command slots then go back to their pool.
		l.forgetOp(in.Op)
	}
	if deadline, held := l.h.LeaseDeadline(); held {
		l.leaseDeadline.Store(int64(max(deadline, 1)))
	} else {
		l.leaseDeadline.Store(0)
	}
	clear(effects)
	*buf = effects[:0]
	return mine
}

// namesOp reports whether an effect refers to command op (its carrier or
// its Route: a fence, an abort, a settling, a clean-up after it).
func namesOp(effects []sm.Effect, op sm.OpID) bool {
	for i := range effects {
		switch effects[i].Kind {
		case sm.EffectFence, sm.EffectAbort, sm.EffectSettleAcquire, sm.EffectCleanupDelete:
			if effects[i].Op == op {
				return true
			}
		}
	}
	return false
}

// apply executes one effect; l.mu is held. due is when a keep-alive renewal
// the effect sends was due (0: unknown).
func (l *Lock) apply(e *sm.Effect, self sm.CallerID, due time.Duration) job {
	switch e.Kind {
	case sm.EffectSendAcquire:
		return job{kind: e.Kind, op: e.Op, ttl: e.TTL, route: l.trackOp(e.Op)}
	case sm.EffectSettleAcquire:
		return job{kind: e.Kind, op: e.Op, route: l.routeOf(e.Op)}
	case sm.EffectSendRenew, sm.EffectSendRelease:
		return l.send(e, self, due)
	case sm.EffectCleanupDelete:
		setOn := l.carrierOf(e.Op)
		l.d.goBackground(func() { l.cleanup(setOn) })
	case sm.EffectAbort:
		if r := l.routeOf(e.Op); r != nil {
			r.Abort()
		}
	case sm.EffectFence:
		l.fence(e.Op)
	case sm.EffectCancelKeepAlive:
		if k := l.keepAliveRunning(); k == ownedKeepAlive {
			l.setOwnedEnd(e.Ending.Cause)
		} else if k != nil {
			k.end(endingError(e.Ending))
		}
		l.setKeepAlive(nil)
	case sm.EffectEndLease:
		l.endLease(e.Ending)
	case sm.EffectArmTimer:
		l.d.timers.arm(l.d.clock, l, e.Timer, e.Seq, e.At)
	case sm.EffectDisarmTimer:
		l.d.timers.disarm(l, e.Timer)
	case sm.EffectResolve:
		if e.Result.Release == sm.ReleaseReleased && l.d.push != nil {
			l.d.push.released(l) // hand the key to a waiter of this process now
		}
		l.resolve(e.Caller, e.Result)
	}
	return job{}
}

// send starts a renewal or a release: the keep-alive's renewals go in its
// node's batch, a command for caller self is returned for it to run, any
// other runs through the driver's Spawn; l.mu is held.
func (l *Lock) send(e *sm.Effect, self sm.CallerID, due time.Duration) job {
	j := job{kind: e.Kind, op: e.Op, ttl: e.TTL, route: l.trackOp(e.Op)}
	keepAlive := e.Kind == sm.EffectSendRenew && e.Caller == 0
	if keepAlive {
		j.due = due
	}
	switch {
	case keepAlive && l.renewer != 0:
		l.renewerOf().enqueue(renewal{lock: l, op: e.Op, ttl: e.TTL, route: j.route, due: due})
	case keepAlive: // no known node: routed by key, on its own
		l.d.goCommand(func() { l.handle(l.execute(context.Background(), j)) })
	case e.Caller == self:
		return j
	default:
		ctx := l.callerContext(e.Caller)
		l.d.goCommand(func() { l.handle(l.execute(ctx, j)) })
	}
	return job{}
}

// callerContext is the ctx of a waiting caller; l.mu is held.
func (l *Lock) callerContext(id sm.CallerID) context.Context {
	if i := l.waiterIndex(id); i >= 0 {
		return l.cmds.waiters.list[i].ctx
	}
	return context.Background()
}

// fence kills the session that carried op, from another connection, and
// reports the answer. It first aborts op's route, so the command is never
// handed to a socket from now on (it may still be on its way: a renewal
// waiting for its session's idle check); a command that never reached a
// session then needs no fence. Fences of one session are shared
// (conn.Transport.Fence), so the other locks whose commands rode the same
// socket pay no second kill.
func (l *Lock) fence(op sm.OpID) {
	var s conn.Session
	if r := l.routeOf(op); r != nil {
		s = r.Abort()
	}
	if s == nil {
		// Answered at once, after this step (l.mu is held here).
		l.d.goBackground(func() { l.handle(event{kind: eventFence, op: op}) })
		return
	}
	l.d.goBackground(func() {
		ctx, cancel := l.d.fenceBound(context.Background())
		defer cancel()
		done := func(error) {}
		if o := l.d.obs; o != nil {
			ctx, done = o.Fence(ctx, l)
		}
		err := l.d.transport.Fence(ctx, s)
		done(err)
		// Stepped right here, so that once this background work ends —
		// Shutdown waits for it — the lock has taken the fence's answer.
		l.handle(event{kind: eventFence, op: op, err: err})
	})
}

// cleanup deletes the lease of an abandoned acquisition, bounded, in the
// background, once its command (carried by setOn) can no longer run after
// the delete (see Driver.cleanupDelete): the key, the permit or the read
// hold; for a writer, its hold and then the waiting marker the try may
// have set instead.
func (l *Lock) cleanup(setOn conn.Session) {
	ctx, cancel := l.d.bound(context.Background(), cleanupTimeout)
	defer cancel()
	err := l.d.cleanupDelete(ctx, setOn, l.ref())
	if err == nil && l.Kind() == KindWrite && !l.ref().fair() { // a fair writer's marker went with its queue's release
		err = l.d.cleanupDelete(ctx, setOn, markerOf(l.wireKey, l.token))
	}
	if err != nil {
		l.d.logger.Debug("lease: cleanup of an abandoned acquisition failed", l.d.KeyArgs(l.wireKey, "error", err)...)
	}
}
