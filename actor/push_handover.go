package actor

import (
	"context"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file is the hand-over (rule PushHandsOverWithinOneLocks): the
// release of a mutex key by a lock of this Locks, while a waiter of this
// Locks is parked on that key, carries the waiter's try in the same
// command (conn.HandOverOp: the key, if still the releaser's, becomes the
// waiter's). The waiter then has the key with the release's reply, where
// otherwise it would send its own SET NX after the change: the hand-off
// within one process loses a round trip.
//
// The waiter's try is its own handle's, stepped exactly as tries.try steps
// it, one input at a time under its lock.mu: InputAcquire and its estimate
// (taken on the releaser's goroutine, before the command is sent), then
// the command's completion, stepped by the waiter's goroutine (finish).
// While its try is carried the waiter is reserved: it holds the key's
// baton (push_wait.go), nobody else of this Locks is woken for the key's
// changes, and the waiter, whatever woke it (its ctx, its sleep), waits
// for the carried try's answer before it does anything else; a try whose
// answer it gave up on is cleaned up as every abandoned try is.
//
// Plain unfair mutex keys only (no fencing, no fair queue, no writer), and
// within bounds: after handOverRun hand-overs of one key in a row, or once
// handOverSpan passed since the first of them, a release yields the key
// (yields), and waiters of other processes get their chance.

// handOverRun and handOverSpan bound a run of hand-overs of one key: the
// release after handOverRun of them, or the first one handOverSpan after
// the run began, frees the key for every process.
const (
	handOverRun  = 64
	handOverSpan = 100 * time.Millisecond
)

// runOver reports whether e's run of hand-overs reached its bound at now.
func (e *pushKey) runOver(now time.Duration) bool {
	return e.handOvers >= handOverRun || e.handOvers > 0 && now-e.runStart >= handOverSpan
}

// carriedTry is a waiter's try carried by a release: its handle, caller,
// send job and, when the command ran (sent), its completion. lock nil: the
// release carried nothing, and the waiter tries by itself.
type carriedTry struct {
	lock *Lock
	id   sm.CallerID
	job  job
	done event
	sent bool
}

// handsOver reports whether t's waiting acquisition may be carried by a
// release: a plain unfair mutex lease.
func (t *tries) handsOver() bool {
	return t.spec.Kind == KindMutex && t.spec.Fair == nil && t.spec.Fenced == nil
}

// carry makes the try a release carries for t's waiter (reserved: its
// goroutine waits): the keep-alive's permission check if it has not
// passed, then the handle and its InputAcquire. ctx is the waiter's.
func (t *tries) carry(ctx context.Context) *carriedTry {
	c := &carriedTry{}
	if ctx.Err() != nil || (t.spec.KeepAlive && !t.checked && t.permit(ctx) != nil) {
		return c // the waiter goes on by itself, and meets the same
	}
	c.lock, c.id, c.job = t.begin(ctx)
	c.lock.mu.Unlock()
	return c
}

// finishCarried goes on with a waiter's try after a release carried it:
// its completion stepped, or, when the release could not carry it, the
// try sent by the waiter itself.
func (t *tries) finishCarried(ctx context.Context, c *carriedTry) (*Lock, error) {
	if c.lock == nil && ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if c.lock == nil {
		return t.one(ctx)
	}
	c.lock.mu.Lock()
	var done *event
	if c.sent {
		done = &c.done
	}
	lock, err := t.finish(ctx, c.lock, c.id, c.job, done)
	if lock != nil && t.spec.KeepAlive && t.d.push != nil {
		t.d.push.watchHeld(lock)
	}
	return lock, err
}

// reserve picks the waiter l's release hands the key over to, and reserves
// it (it has the baton), or returns nil: l is no plain unfair mutex lock,
// nobody of this Locks is parked on the key, its first waiter is not
// parked or may not be carried, the key's run of hand-overs reached its
// bound (runOver: the release yields), or hand-overs were turned off.
func (h *pushHub) reserve(l *Lock) *pushWaiter {
	if l.Kind() != KindMutex || l.Fair() || h.entries.Load() == 0 || h.d.handOverOff.Load() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.keys[l.wireKey]
	if e == nil || e.shared || e.member || e.baton != nil || len(e.waiters) == 0 || e.runOver(h.d.clock.Now()) || h.closed {
		return nil
	}
	w := e.waiters[0]
	if !w.parked || w.reserved || w.t == nil || !w.t.handsOver() {
		return nil
	}
	e.baton, e.missed, e.verify = w, false, false
	if e.handOvers == 0 {
		e.runStart = h.d.clock.Now()
	}
	e.handOvers++
	w.reserved = true
	h.stats.handOvers++
	return w
}

// yields reports whether l's release frees the key for every process: its
// run of hand-overs reached its bound (runOver) and waiters of this Locks
// wait on it. Its reply then hands no baton, and the key's invalidation is
// not read as its release (releaseSent): the waiters here read the key
// before they try, as those of other processes do, and none of them is
// ahead.
func (h *pushHub) yields(l *Lock) bool {
	if l.Kind() != KindMutex || l.Fair() || h.entries.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.keys[l.wireKey]
	if e == nil || !e.runOver(h.d.clock.Now()) || len(e.waiters) == 0 {
		return false
	}
	e.yielding = l
	return true
}

// deliver gives a reserved waiter its carried try, and wakes it. handed
// says the release released the key into it: its step must not hand the
// baton on (released).
func (h *pushHub) deliver(w *pushWaiter, c *carriedTry, l *Lock, handed bool) {
	h.mu.Lock()
	w.carried = c
	if e := h.keys[l.wireKey]; e != nil && handed {
		e.handedBy = l
	}
	h.mu.Unlock()
	w.ready <- struct{}{}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// takeCarried returns the try a release carried for w, waiting for it
// while the release's command is on the wire, or nil when w was not
// reserved. The wait has no ctx: the command is bounded by its own, and
// an answer that came after the caller gave up is settled by finish.
func (h *pushHub) takeCarried(w *pushWaiter) *carriedTry {
	if w == nil {
		return nil
	}
	h.mu.Lock()
	reserved := w.reserved
	h.mu.Unlock()
	if !reserved {
		return nil
	}
	_ = h.d.spawn.Wait(context.Background(), w.ready)
	h.mu.Lock()
	defer h.mu.Unlock()
	c := w.carried
	w.carried, w.reserved = nil, false
	return c
}

// handOver sends l's release as a hand-over to w (reserved) on session s,
// and returns the release's completion. A hand-over that did not run
// (refused before or by the server) gives w its try back to send itself;
// the release is then sent alone, and after an error reply hand-overs stop
// for this Locks (a server or ACL without scripts).
func (l *Lock) handOver(ctx context.Context, j job, s conn.Session, w *pushWaiter, unfenced bool) event {
	d := l.d
	c := w.t.carry(w.ctx)
	if c.lock == nil || c.job.kind != sm.EffectSendAcquire || (c.job.route != nil && !c.job.route.Carry(s)) {
		d.push.deliver(w, c, l, false)
		return l.releaseAlone(ctx, j, s, unfenced)
	}
	d.inflight.Add() // the waiter's try: its finish steps the completion, then Done
	res, err := d.run(ctx, s, conn.HandOverOp(l.wireKey, l.token, c.lock.token, w.t.ms), j.route)
	if rs := j.route.Session(); rs != nil && c.job.route != nil && rs != s {
		c.job.route.Carry(rs) // followed a redirect: the waiter's try went there too
	}
	outcome := outcomeOf(res.Owned, err)
	if err != nil && outcome != sm.OutcomeUncertain {
		d.inflight.Done()
		d.push.deliver(w, c, l, false)
		if outcome == sm.OutcomeDefinite {
			d.handOverOff.Store(true)
			return l.releaseAlone(ctx, j, s, unfenced)
		}
		return event{kind: eventDone, op: j.op, outcome: outcome, err: err, unfenced: unfenced}
	}
	if res.Waiting && res.Unconfirmed != nil {
		w.t.answer.unconfirmed = res.Unconfirmed
	}
	w.t.answer.uncertain = outcome == sm.OutcomeUncertain
	c.done = event{kind: eventDone, op: c.job.op, outcome: acquireOutcome(res.Waiting, err), err: err}
	c.sent = true
	d.push.deliver(w, c, l, res.Owned)
	return event{kind: eventDone, op: j.op, outcome: outcome, err: err, unfenced: unfenced}
}

// releaseAlone sends l's release by itself.
func (l *Lock) releaseAlone(ctx context.Context, j job, s conn.Session, unfenced bool) event {
	res, err := l.d.run(ctx, s, l.ref().release(), j.route)
	return event{kind: eventDone, op: j.op, outcome: outcomeOf(res.Owned, err), err: err, unfenced: unfenced}
}
