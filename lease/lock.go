package lease

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// Lock is a held lease with an owner token generated at acquisition. Its
// methods are safe for concurrent use: they are serialised one at a time
// through the handle's state machine (docs/states.md), so concurrent
// releases share one delete and resets apply in request order. A Lock is
// returned only when acquired; it is never the zero value and must not be
// copied. Release or Close it when done; until then a keep-alive, if any,
// keeps renewing it.
type Lock struct {
	locks   *Locks // the view that acquired it (key prefix)
	m       *managed
	key     string
	wireKey string
	token   Token
	mailbox *actor.Mailbox[event] // created on first need, under mu; never changed after

	// leaseDeadline is the handle's LeaseDeadline while Held, 0 otherwise,
	// published after every step so estimates are read without l.mu.
	leaseDeadline atomic.Int64

	mu        sync.Mutex // guards everything below; held only for a Step and its non-blocking effects
	h         sm.Handle
	callers   sm.CallerID // last CallerID handed out
	waiters   []waiter
	oneWaiter [1]waiter // backing store for the usual single waiter
	ops       [2]opSlot // the Route of each command in flight
	renewal   timerSlot
	deadline  timerSlot
	node      string     // node of the renewal session (keep-alive batches)
	keepAlive *KeepAlive // the running keep-alive, nil when none
	owned     *KeepAlive // the keep-alive started by WithKeepAlive, kept after it ends
	ending    sm.Ending  // why the lease ended; Cause is CauseNone while it lasts
	watch     *leaseWatch
	// clientClosed: the keep-alive ended because the rueidis client was closed
	clientClosed bool
	renewalDue   time.Duration      // when the armed renewal timer is due (0: never armed)
	acquireSpan  *trace.SpanContext // the acquisition's span, with WithTracerProvider (fences link to it)
}

// leaseWatch is the lock's context, created on first Context call.
type leaseWatch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// waiter is a caller waiting for its EffectResolve.
type waiter struct {
	id     sm.CallerID
	ctx    context.Context // governs the command started for this caller
	reply  actor.Reply[sm.Result]
	result sm.Result
	done   bool // resolved before the caller parked on reply
	gone   bool // the caller stopped waiting; its answer is dropped
}

// opSlot remembers which session carries a command in flight (its Route),
// for the fence, and lets the core abort it before it is sent.
type opSlot struct {
	op    sm.OpID
	route conn.Route
}

// Key returns the lock's key without the Locks' key prefix. It does not block.
func (l *Lock) Key() string { return l.key }

// Token returns the owner token generated for this acquisition. It is a
// secret: do not log it (slog redacts it). It does not block.
func (l *Lock) Token() Token { return l.token }

// Duration returns the lease duration: the acquired one (rounded up to whole
// milliseconds), or the one applied by the latest successful renewal. It
// does not block.
func (l *Lock) Duration() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h.Duration()
}

// State returns the handle's current state. A lock whose RemainingEstimate
// reached 0 is not Held: State then reports it lost (or Uncertain while a
// command of it is still being fenced), with or without a keep-alive. It
// does not block.
func (l *Lock) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observeLocked()
	return stateOf(l.h.State())
}

// observeLocked steps the handle with the time when its lease estimate ran
// out, so that it no longer counts as held; l.mu is held.
func (l *Lock) observeLocked() {
	now := l.m.clock.Now()
	if deadline, holding := l.h.LeaseDeadline(); holding && deadline <= now {
		l.step(sm.Input{Kind: sm.InputObserve, Now: now}, 0)
	}
}

// RemainingEstimate is Duration minus the monotonic time elapsed since just
// before the acquisition or the last confirmed renewal was sent, clamped at
// 0, and 0 whenever the lock is not held. The server's lease can only
// outlive this estimate. It is an estimate, not an ownership check (see
// VerifyStillHeld). It does not block.
func (l *Lock) RemainingEstimate() time.Duration {
	deadline := time.Duration(l.leaseDeadline.Load())
	if deadline == 0 {
		return 0
	}
	return max(0, deadline-l.m.clock.Now())
}

// ExpiresAtEstimate is the wall-clock time now plus RemainingEstimate. It
// does not block.
func (l *Lock) ExpiresAtEstimate() time.Time {
	return time.Now().Add(l.RemainingEstimate())
}

// VerifyStillHeld asks the primary whether the key still holds this lock's
// token (GET, with the acquiring view's prefix). It changes no state, even
// when it returns false. It blocks for one round trip; ctx cancellation
// just ends the wait.
func (l *Lock) VerifyStillHeld(ctx context.Context) (bool, error) {
	ctx, cancel := l.m.commandContext(ctx)
	defer cancel()
	res, err := l.m.core.pool.Owner(ctx, l.wireKey)
	if err != nil {
		return false, err
	}
	return res.Owned && res.Token == l.token.wire(), nil
}

// newCaller registers a waiting caller; l.mu is held.
func (l *Lock) newCaller(ctx context.Context) sm.CallerID {
	l.callers++
	if l.waiters == nil {
		l.waiters = l.oneWaiter[:0]
	}
	l.waiters = append(l.waiters, waiter{id: l.callers, ctx: ctx})
	return l.callers
}

// waiterIndex finds caller id; l.mu is held.
func (l *Lock) waiterIndex(id sm.CallerID) int {
	for i := range l.waiters {
		if l.waiters[i].id == id {
			return i
		}
	}
	return -1
}

func (l *Lock) removeWaiter(i int) {
	l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
	l.waiters[len(l.waiters) : len(l.waiters)+1][0] = waiter{} // drop the ctx and reply
	if len(l.waiters) == 0 {
		l.waiters = nil
	}
}

// resolve answers caller id; l.mu is held.
func (l *Lock) resolve(id sm.CallerID, r sm.Result) {
	i := l.waiterIndex(id)
	if i < 0 {
		return
	}
	if l.waiters[i].gone || l.waiters[i].reply.Send(r) {
		l.removeWaiter(i)
		return
	}
	l.waiters[i].result, l.waiters[i].done = r, true
}

// collect takes caller id's answer if it has one; l.mu is held.
func (l *Lock) collect(id sm.CallerID) (sm.Result, bool) {
	i := l.waiterIndex(id)
	if i < 0 || !l.waiters[i].done {
		return sm.Result{}, false
	}
	r := l.waiters[i].result
	l.removeWaiter(i)
	return r, true
}

// request steps the handle with in on behalf of a new caller and waits for
// its answer. A command the step starts for this caller runs right here,
// on the caller's goroutine, governed by ctx. When ctx ends while the caller
// waits for others (a joined release, a queued reset, a fence), the caller
// stops waiting and the handle goes on; if a fence is still pending then,
// the error matches ErrFencePending (the lock is no longer held, and
// Locks.Close waits for the fence). It returns within moments of ctx's end:
// nothing after it waits for the server.
func (l *Lock) request(ctx context.Context, in sm.Input) (sm.Result, error) {
	if ctx.Err() != nil {
		return sm.Result{}, context.Cause(ctx)
	}
	l.mu.Lock()
	in.Caller = l.newCaller(ctx)
	in.Now = l.m.clock.Now()
	job := l.step(in, in.Caller)
	var ownErr error // the uncertain error of a command this caller ran
	for job.op != 0 {
		l.m.inflight.Add() // Locks.Close waits for the command and the step of its completion
		l.mu.Unlock()
		done := l.execute(ctx, job)
		l.mu.Lock()
		if done.outcome == sm.OutcomeUncertain {
			ownErr = done.err
		}
		job = jobNone
		if next, ok := l.input(done); ok {
			job = l.step(next, in.Caller)
		}
		l.m.inflight.Done()
	}
	if res, ok := l.collect(in.Caller); ok {
		l.mu.Unlock()
		return res, nil
	}
	reply := actor.NewReply[sm.Result]()
	l.waiters[l.waiterIndex(in.Caller)].reply = reply
	l.mu.Unlock()
	res, err := reply.Wait(ctx, nil)
	if err != nil {
		switch {
		case l.abandon(in.Caller):
			err = fencePending(err, ownErr)
		case ownErr != nil:
			// The command this caller ran had an unknown outcome (its fence
			// may have answered already): say so, not only why we stopped.
			err = fmt.Errorf("%w: %w", err, ownErr)
		}
	}
	return res, err
}

// fencePending is the error of a caller whose ctx ended while a fence of
// its lock was pending.
func fencePending(cause, commandErr error) error {
	if commandErr == nil {
		return fmt.Errorf("%w: %w", ErrFencePending, cause)
	}
	return fmt.Errorf("%w: %w: %w", ErrFencePending, cause, commandErr)
}

// abandon tells the handle that caller id stopped waiting, and reports
// whether a fence of the lock is still pending.
func (l *Lock) abandon(id sm.CallerID) (fencing bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fencing = l.h.State() == sm.Uncertain || l.h.State() == sm.Recovering
	if l.waiterIndex(id) < 0 {
		return fencing
	}
	l.step(sm.Input{Kind: sm.InputCallerCancelled, Caller: id, Now: l.m.clock.Now()}, 0)
	if i := l.waiterIndex(id); i >= 0 {
		l.waiters[i].gone = true // its command still runs; nobody waits for the answer
	}
	return fencing
}
