package lease

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file is what a waiting acquisition (WithWait, WithWaitUntilDone) does
// with a try that failed (rule WaitRidesOutTransportErrors): which errors
// end the wait, and how a SET whose outcome is unknown is settled so that
// the wait can go on.

// tries is one acquisition's sequence of tries: one without a wait. It lives
// on its caller's stack.
type tries struct {
	l       *Locks
	m       *managed
	key     string // as the caller gave it
	wireKey string
	ttl     time.Duration
	ms      int64
	o       acquireOptions
	node    string // WithKeepAlive: the node whose renewal permission was checked
	checked bool   // WithKeepAlive: that check passed
	poll    sm.Poll
}

// waits reports whether the caller asked to wait.
func (t *tries) waits() bool { return t.o.wait > 0 || t.o.untilDone }

// permit checks, once, that the lock's keep-alive may run where the key
// lives (see managed.renewalSession), before any SET is sent.
func (t *tries) permit(ctx context.Context) error {
	s, err := t.m.renewalSession(ctx, t.wireKey)
	if err != nil {
		return err
	}
	t.node, t.checked = s.Node(), true
	return nil
}

// one makes one try: the keep-alive's permission check if it has not
// passed yet, then the SET. nil, nil is a refusal (another owner holds the
// key).
func (t *tries) one(ctx context.Context) (*Lock, error) {
	if t.o.keepAlive && !t.checked {
		if err := t.permit(ctx); err != nil {
			return nil, err
		}
	}
	var settle settleBudget // none without a wait: an uncertain SET ends the call
	if t.waits() {
		settle = t.budget()
	}
	lock, err := t.l.tryOnce(ctx, t.m, t.key, t.ttl, t.ms, t.o.keepAlive, t.node, t.o.fenced, settle)
	if lock != nil && t.o.keepAlive && t.m.push != nil {
		t.m.push.watchHeld(lock)
	}
	return lock, err
}

// budget is what is left of the wait, for settling an uncertain SET.
func (t *tries) budget() settleBudget {
	if t.poll.UntilDone {
		return settleBudget{on: true, unbounded: true}
	}
	return settleBudget{on: true, left: t.poll.Wait - (t.m.clock.Now() - t.poll.Start)}
}

// ridesOut reports whether a waiting acquisition goes on after a try that
// failed with err: the caller asked to wait, its ctx lasts, and a later try
// may succeed (waitRidesOut), the rueidis client still being open.
func (t *tries) ridesOut(ctx context.Context, err error) bool {
	return t.waits() && ctx.Err() == nil && waitRidesOut(err) && t.m.core.pool.ClientAlive() == nil
}

// waitRidesOut is the decision per class of failure (rule
// WaitRidesOutTransportErrors): a failure that changed nothing a later try
// cannot undo, and that a later try may not meet, lets the wait go on —
// not submitted (a dial refused during a restart, a session found dead
// before the hand-off), a reply that proves the SET did not run (LOADING,
// READONLY, CLUSTERDOWN, MASTERDOWN, TRYAGAIN, BUSY…), an unknown outcome
// (settled, or abandoned and cleaned up, by tryOnce), a reply that came
// after the lease could have expired (cleaned up). A refusal every later
// try would get too ends it at once: another server error reply (NOPERM,
// WRONGTYPE, OOM…), a permission the keep-alive lacks, a malformed fenced
// reply, the Locks or its rueidis client closed.
func waitRidesOut(err error) bool {
	var permErr *PermissionError
	switch {
	case errors.Is(err, sm.ErrAcquiredTooLate):
		return true
	case errors.As(err, &permErr), errors.Is(err, conn.ErrMalformedFencingToken),
		errors.Is(err, conn.ErrPoolClosed), errors.Is(err, conn.ErrClientClosed):
		return false
	case errors.Is(err, conn.ErrDidNotRun):
		return true
	}
	class := conn.ClassOf(err)
	return class == conn.NotSubmitted || class == conn.Uncertain
}

// settleBudget is how long settling an uncertain SET may take: what is left
// of the wait, or as long as the caller's ctx lasts. The zero value settles
// nothing.
type settleBudget struct {
	on        bool
	left      time.Duration
	unbounded bool
}

// errWaitOver is the cause that ends the settling of an uncertain SET when
// the wait's budget is spent.
var errWaitOver = errors.New("the wait's budget is spent")

// settleSet finds out whether a waiting acquisition's SET, whose outcome is
// unknown, took the key, so that the wait goes on instead of ending with
// that unknown. It fences setOn, the socket that carried the SET (once the
// kill answered, the SET has run or never will: rule FenceIsFinal), then
// reads the key on a fresh session (setOn was retired by the fence): ours
// reports that it holds token. settled is false when that cannot be found
// out — no carrier, a carrier without identity or a fence the server
// refuses, a read refused, the Locks closing — or ctx or the budget ended
// first; the try is then abandoned as any uncertain acquisition (its
// clean-up runs in the background). Failures that may pass (transport,
// dial, did-not-run replies such as LOADING after a restart) are retried
// every cleanupRetry. It blocks for the fence and the read.
func (m *managed) settleSet(ctx context.Context, setOn conn.Session, wireKey, token string, budget settleBudget) (ours, settled bool) {
	if setOn == nil || !budget.on || (!budget.unbounded && budget.left <= 0) {
		return false, false
	}
	// A cancellation, not a deadline: the fence travels on the client's
	// shared pipeline connection (see fenceContext).
	sctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stop()
	if !budget.unbounded {
		timer := m.clock.AfterFunc(budget.left, func() { cancel(errWaitOver) })
		defer timer.Stop()
	}
	fenced := false
	for {
		if m.core.closedErr() != nil {
			return false, false // Locks.Close began: the try is abandoned, its clean-up awaited by Close
		}
		var err error
		if !fenced {
			fctx, done := m.fenceBound(sctx)
			err = m.core.pool.Fence(fctx, setOn)
			done()
			if fenced = err == nil; fenced {
				continue // read at once
			}
		} else {
			rctx, done := m.fenceBound(sctx) // a read bounded as a fence is
			var res conn.Result
			res, err = m.core.pool.Do(rctx, conn.OwnerOp(wireKey), nil)
			done()
			if err == nil {
				return res.Owned && res.Token == token, true
			}
		}
		if !settleRetries(err) {
			return false, false
		}
		if sleepContext(sctx, m.clock, cleanupRetry) != nil {
			return false, false
		}
	}
}

// settleRetries reports whether a fence or read that settles an uncertain
// SET may succeed when sent again: a kill is idempotent and a read changes
// nothing, so anything but a refusal for good is retried.
func settleRetries(err error) bool {
	switch {
	case errors.Is(err, conn.ErrNoIdentity), errors.Is(err, conn.ErrPoolClosed), errors.Is(err, conn.ErrClientClosed):
		return false
	case errors.Is(err, conn.ErrDidNotRun):
		return true
	}
	class := conn.ClassOf(err)
	return class == conn.NotSubmitted || class == conn.Uncertain
}

// fenceBound bounds one fence (or the read that follows it) by
// FenceTimeout, or by WithCommandTimeout when that is shorter, under
// parent, as a cancellation (see fenceContext).
func (m *managed) fenceBound(parent context.Context) (context.Context, context.CancelFunc) {
	d := FenceTimeout
	if t := m.core.commandTimeout; t > 0 && t < d {
		d = t
	}
	ctx, cancel := context.WithCancel(parent)
	timer := time.AfterFunc(d, cancel)
	return ctx, func() {
		timer.Stop()
		cancel()
	}
}
