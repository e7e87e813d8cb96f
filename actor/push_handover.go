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
// changes, and the waiter, whatever woke it (its sleep, a change), waits
// for the carried try's answer before it does anything else — except its
// ctx: when that ends first, the waiter returns at once, as it does while
// its own SET NX is on the wire, and gives the try up (gaveUp). The
// release then steps the try's answer itself when it comes (abandon): the
// caller cancelled, then the completion, whose clean-up deletes a key the
// script gave the try, as for every abandoned try.
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
	// What the reply tells the try's answer besides done (tryAnswer).
	unconfirmed error
	uncertain   bool
}

// handsOver reports whether t's waiting acquisition may be carried by a
// release: a plain unfair mutex lease.
func (t *tries) handsOver() bool {
	return t.spec.Kind == KindMutex && t.spec.Fair == nil && t.spec.Fenced == nil
}

// carry makes the try a release carries for t's waiter (reserved: its
// goroutine waits): the handle and its InputAcquire, local work only. A
// waiter whose keep-alive's permission was not checked yet (a check that
// failed, ridden out) goes on by itself: the release sends nothing else.
// ctx is the waiter's.
func (t *tries) carry(ctx context.Context) *carriedTry {
	c := &carriedTry{}
	if ctx.Err() != nil || (t.spec.KeepAlive && !t.checked) {
		return c
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
		if c.unconfirmed != nil {
			t.answer.unconfirmed = c.unconfirmed
		}
		t.answer.uncertain = c.uncertain
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
// baton on (released). A waiter that gave the try up is not there: its
// answer is stepped here (abandon), and the key's next waiter is woken by
// the release's reply as after any release.
func (h *pushHub) deliver(w *pushWaiter, c *carriedTry, l *Lock, handed bool) {
	h.mu.Lock()
	if w.gaveUp {
		h.mu.Unlock()
		h.d.abandon(c)
		return
	}
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
// reserved. When ctx ends first it returns ctx's cause, and w gives the
// try up (gaveUp: deliver steps its answer), once the release made it:
// that is local work, and the release reads w's tries until then.
func (h *pushHub) takeCarried(ctx context.Context, w *pushWaiter) (*carriedTry, error) {
	if w == nil {
		return nil, nil
	}
	h.mu.Lock()
	reserved := w.reserved
	h.mu.Unlock()
	if !reserved {
		return nil, nil
	}
	err := h.d.spawn.Wait(ctx, w.ready)
	if err != nil {
		_ = h.d.spawn.Wait(context.Background(), w.made)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := w.carried
	w.carried, w.reserved = nil, false
	if c == nil {
		w.gaveUp = true
		return nil, err
	}
	for _, ch := range [...]chan struct{}{w.ready, w.made} { // the tokens of this carry left unread
		select {
		case <-ch:
		default:
		}
	}
	return c, nil
}

// abandon steps the answer of a carried try its waiter gave up
// (takeCarried), on the release's goroutine, as finish would for a caller
// whose ctx ended: the caller cancelled (the handle is Abandoned), then
// the completion — a reply that may have given the try the key emits the
// clean-up delete, which goes out after that reply. A try the release did
// not send completes as not submitted: nothing to clean up.
func (d *Driver) abandon(c *carriedTry) {
	l := c.lock
	if l == nil {
		return
	}
	done := c.done
	if !c.sent {
		done = event{kind: eventDone, op: c.job.op, outcome: sm.OutcomeNotSubmitted, err: context.Canceled}
	}
	l.mu.Lock()
	l.step(sm.Input{Kind: sm.InputCallerCancelled, Caller: c.id, Now: d.clock.Now()}, c.id)
	if next, ok := l.input(done); ok {
		l.step(next, c.id)
	}
	l.collect(c.id)
	l.mu.Unlock()
	if c.sent {
		d.inflight.Done()
	}
}

// handOver sends l's release as a hand-over to w (reserved) on session s,
// and returns the release's completion. A hand-over that did not run
// (refused before or by the server) gives w its try back to send itself;
// the release is then sent alone, and after an error reply hand-overs stop
// for this Locks (a server or ACL without scripts).
func (l *Lock) handOver(ctx context.Context, j job, s conn.Session, w *pushWaiter, unfenced bool) event {
	d := l.d
	c, ms := w.t.carry(w.ctx), w.t.ms
	w.made <- struct{}{} // the waiter may give the try up now (takeCarried): w.t is not read again
	if c.lock == nil || c.job.kind != sm.EffectSendAcquire || (c.job.route != nil && !c.job.route.Carry(s)) {
		d.push.deliver(w, c, l, false)
		return l.releaseAlone(ctx, j, s, unfenced)
	}
	d.inflight.Add() // the waiter's try: its finish steps the completion, then Done
	res, err := d.run(ctx, s, conn.HandOverOp(l.wireKey, l.token, c.lock.token, ms), j.route)
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
		c.unconfirmed = res.Unconfirmed
	}
	c.uncertain = outcome == sm.OutcomeUncertain
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
