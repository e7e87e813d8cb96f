package actor

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file sends a lock's renewals and releases, and keeps the commands
// it has in flight.

// lockCmds is a lock's commands in flight: at most two at once (a renewal
// and a release, or the SET and nothing else), each with the Route that
// records its carrier and may abort it. It lives outside the Lock because
// a held lock is idle almost all the time: a keep-alive lock gives it back
// whenever no command is in flight, and any lock once its lease ended with
// none in flight (see dropIdleCmds), which keeps the Lock in the 208-byte
// size class. Given back only when no command of the lock is in flight, it is
// reused: a Route is used by a transport only during the call it was given
// to, and by the driver only until the completion it carried was stepped.
type lockCmds struct {
	ops    [2]sm.OpID    // the commands in flight (0: a free slot)
	routes [2]conn.Route // the Route of each command in flight (ops[i]'s)
	// waiters are the lock's waiting callers, nil (back in their pool)
	// when none: here rather than a pointer in every Lock, as callers wait
	// on a lock only around its commands.
	waiters *waitList
}

// freeCmds keeps lockCmds for reuse (a channel, as freeWaitLists).
var freeCmds = make(chan *lockCmds, 4096)

func getCmds() *lockCmds {
	select {
	case c := <-freeCmds:
		return c
	default:
		return new(lockCmds)
	}
}

func putCmds(c *lockCmds) {
	if c.waiters != nil {
		*c.waiters = waitList{}
		putWaitList(c.waiters)
		c.waiters = nil
	}
	c.ops = [2]sm.OpID{}
	c.routes[0].Reset()
	c.routes[1].Reset()
	select {
	case freeCmds <- c:
	default: // enough are kept
	}
}

// trackOp gives op one of the lock's two command slots and returns its
// Route; l.mu is held.
func (l *Lock) trackOp(op sm.OpID) *conn.Route {
	if l.cmds == nil {
		l.cmds = getCmds()
	}
	c := l.cmds
	for i := range c.ops {
		if c.ops[i] == 0 {
			c.ops[i] = op
			c.routes[i].Reset()
			return &c.routes[i]
		}
	}
	panic("actor: a third command in flight on one lock")
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
// held. With no command left in flight, a keep-alive lock, or one whose
// lease ended, gives its lockCmds back (the next command takes one); a lock
// without keep-alive keeps them for its release.
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
	l.dropIdleCmds()
}

// dropIdleCmds gives the lock's lockCmds back when no command is in
// flight, no caller waits and the lock keeps alive or its lease ended (a
// lock without keep-alive keeps them for its release); l.mu is held.
func (l *Lock) dropIdleCmds() {
	c := l.cmds
	if c != nil && c.ops == [2]sm.OpID{} && c.waiters == nil && (l.keepAliveRunning() != nil || l.ended()) {
		l.cmds = nil
		putCmds(c)
	}
}

// recycle makes l, a refused try's Lock, zero again for the next try.
func (l *Lock) recycle() {
	if l.cmds != nil {
		putCmds(l.cmds)
	}
	*l = Lock{}
}

// execute sends a renewal or release for a caller and returns its
// completion. It blocks for the round trip.
func (l *Lock) execute(ctx context.Context, j job) event {
	commandCtx, cancel := l.d.commandContext(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		ev := l.executeOnce(commandCtx, j)
		if ev.outcome == sm.OutcomeNotSubmitted {
			ev.err = notSentError(ctx, ev.err) // the caller's ctx ended first: its cause, as is
		}
		if attempt > 0 || ev.outcome != sm.OutcomeNotSubmitted || !conn.RetriableOnFreshSession(ev.err) {
			return ev
		}
		// The session was found dead before the command was handed to it:
		// once more on a fresh session.
	}
}

func (l *Lock) executeOnce(ctx context.Context, j job) event {
	s, err := l.d.sessionFor(ctx, l.wireKey)
	if err != nil {
		return event{kind: eventDone, op: j.op, outcome: sm.OutcomeNotSubmitted, err: err}
	}
	if j.kind == sm.EffectSendRenew {
		return l.executeRenew(ctx, j, s)
	}
	unfenced := false
	if err := l.d.mayFence(ctx, s); err != nil {
		var permErr *PermissionError
		if !errors.As(err, &permErr) {
			return event{kind: eventDone, op: j.op, outcome: notSentOutcome(err), err: err}
		}
		unfenced = true
		l.d.warnUnfenced(err)
	}
	h := l.d.push
	if h != nil && h.yields(l) {
		return l.releaseAlone(ctx, j, s, unfenced) // waiters of other processes get their chance
	}
	if h != nil && h.releaseSent(l) {
		defer h.releaseAnswered(l)
	}
	if h != nil {
		if w := h.reserve(l); w != nil {
			return l.handOver(ctx, j, s, w, unfenced) // a waiter of this Locks gets the key with the reply
		}
	}
	return l.releaseAlone(ctx, j, s, unfenced)
}

func (l *Lock) executeRenew(ctx context.Context, j job, s conn.Session) event {
	ms := ceilMillis(j.ttl)
	err := l.d.transport.ClientAlive() // a closed client ends the keep-alive, here as in the batches
	unfenced := false
	if err == nil {
		unfenced, err = l.d.renewalPermit(ctx, s) // fenced unless unfenced renewal was chosen
	}
	if err != nil {
		return event{kind: eventDone, op: j.op, outcome: notSentOutcome(err), err: err}
	}
	if o := l.d.obs; o != nil && j.due > 0 {
		o.RenewalSent(l, j.due, l.d.clock.Now())
	}
	res, err := l.d.run(ctx, s, l.ref().renew(ms), j.route)
	outcome, err := renewalOutcome(res.Owned, err)
	return event{kind: eventDone, op: j.op, outcome: outcome, err: err, unfenced: unfenced}
}

// run sends op on session s, the key's current session, and follows a
// redirect through the transport. route records every session that carries
// it.
func (d *Driver) run(ctx context.Context, s conn.Session, op conn.Op, route *conn.Route) (conn.Result, error) {
	res, err := s.Do(ctx, op, route)
	if isRedirect(err) {
		return d.transport.Do(ctx, op, route)
	}
	return res, err
}

// notSentOutcome classifies a failure that happened before the command was
// handed to the connection: a server error reply stays definite; anything
// else proves only that our command was not sent.
func notSentOutcome(err error) sm.Outcome {
	if outcomeOf(false, err) == sm.OutcomeDefinite {
		return sm.OutcomeDefinite
	}
	return sm.OutcomeNotSubmitted
}

// outcomeOf classifies a command's answer for the handle. A reply proving
// the command did not run and that a later attempt may succeed counts as
// not submitted (a keep-alive retries it while the deadline lasts; a
// release restores Held). A command refused because the driver was closed
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

// renewalOutcome classifies a renewal's answer (outcomeOf). The mutation
// build (mutation_on.go) ignores the answer, on purpose: a renewal the
// server refused, or whose outcome is unknown, counts as confirmed.
func renewalOutcome(ok bool, err error) (sm.Outcome, error) {
	outcome := outcomeOf(ok, err)
	if outcome == sm.OutcomeUncertain && errors.Is(err, conn.ErrNotReplicated) {
		// It ran and was answered, so nothing of it is pending to fence,
		// but it confirms nothing (rule SentinelRenewalsNeedReplicaAcks):
		// the estimate stays, and the keep-alive retries as after a
		// renewal not sent (routed to the new primary once it is known).
		outcome = sm.OutcomeNotSubmitted
	}
	if mutationRenewalAnswerIgnored && outcome != sm.OutcomeOK {
		return sm.OutcomeOK, nil // deliberately wrong: see mutation_on.go
	}
	return outcome, err
}

// isRedirect reports a MOVED/ASK answer (the command did not run there).
func isRedirect(err error) bool {
	if err == nil {
		return false
	}
	var e *conn.Error
	return errors.As(err, &e) && e.Redirect != nil
}

// ceilMillis is d in whole milliseconds, rounded up.
func ceilMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
