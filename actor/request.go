package actor

import (
	"context"
	"errors"
	"fmt"
	"time"

	sm "github.com/respire-go/respire/statemachine"
)

// Request steps the lock with in on behalf of a new caller and waits for
// its answer: the way every user request reaches a handle (release, reset,
// keep-alive start and stop, close). A command the step starts for this
// caller runs right here, on the caller's goroutine, governed by ctx, and
// its completion is stepped here too. When ctx ends while the caller waits
// for others (a joined release, a queued reset), the caller stops waiting
// and the handle goes on. But while a fence of the lock is pending — a
// command of it may still run — the caller waits for the fence, whatever
// ctx says (rule FenceBeforeReturn): the fence runs under its own bound
// (FenceTimeout), on a connection that does not share the fenced one's
// stall, so this wait is bounded too. If the fence failed, or has not
// answered within that bound, the error matches ErrFencePending (the lock
// is no longer held, and Shutdown waits for the fence). in.Caller and
// in.Now are set here.
func (l *Lock) Request(ctx context.Context, in sm.Input) (sm.Result, error) {
	if ctx.Err() != nil && !l.fencing() {
		return sm.Result{}, context.Cause(ctx) // sends nothing; with a fence pending, it is waited for below
	}
	l.mu.Lock()
	in.Caller = l.newCaller(ctx)
	in.Now = l.d.clock.Now()
	job := l.step(in, in.Caller)
	var ownErr error // the uncertain error of a command this caller ran
	for job.op != 0 {
		l.d.inflight.Add() // Shutdown waits for the command and the step of its completion
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
		l.d.inflight.Done()
	}
	if res, ok := l.collect(in.Caller); ok {
		l.mu.Unlock()
		return res, nil
	}
	ready := make(chan struct{})
	l.cmds.waiters.list[l.waiterIndex(in.Caller)].ready = ready
	l.mu.Unlock()
	err := l.d.spawn.Wait(ctx, ready)
	var ctxErr error // the caller's ctx ended while its lock was being fenced
	if err != nil && l.fencing() && l.awaitFence(ready) {
		ctxErr, err = err, nil
	}
	if err == nil {
		l.mu.Lock()
		res, _ := l.collect(in.Caller)
		l.mu.Unlock()
		if ctxErr != nil && res.Err != nil && !errors.Is(res.Err, ctxErr) {
			res.Err = fmt.Errorf("%w (stopped waiting: %w)", res.Err, ctxErr)
		}
		if res.FenceErr != nil {
			res.Err = &fencePendingError{fence: res.FenceErr, command: res.Err}
		}
		return res, nil
	}
	switch {
	case l.abandon(in.Caller):
		err = fencePending(err, ownErr)
	case ownErr != nil && errors.Is(ownErr, err):
		// The command this caller ran had an unknown outcome because the
		// caller stopped waiting (its fence may have answered already): its
		// error says both, once.
		err = ownErr
	case ownErr != nil:
		// The command this caller ran had an unknown outcome (its fence
		// may have answered already): say so, not only why we stopped.
		err = fmt.Errorf("%w: %w", err, ownErr)
	}
	return sm.Result{}, err
}

// fencePending is the error of a caller whose ctx ended while a fence of
// its lock was pending, and that waited FenceTimeout for it in vain.
func fencePending(cause, commandErr error) error {
	return &fencePendingError{cause: cause, command: commandErr}
}

// fencing reports whether a fence of the lock is pending: a command of it
// may still run.
func (l *Lock) fencing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h.State() == sm.Uncertain || l.h.State() == sm.Recovering
}

// awaitFence waits, after the caller's ctx ended, for the answer the
// lock's fence brings: at most FenceTimeout (on the driver's clock), the
// fence's own bound. It reports whether the answer came (if not, the
// caller leaves with ErrFencePending).
func (l *Lock) awaitFence(ready <-chan struct{}) bool {
	ctx, cancel := l.d.bound(context.Background(), FenceTimeout+fenceSlack)
	defer cancel()
	return l.d.spawn.Wait(ctx, ready) == nil
}

// fenceSlack is how much longer than a fence's bound a caller waits for
// the fence's answer to be stepped.
const fenceSlack = 100 * time.Millisecond

// abandon tells the handle that caller id stopped waiting, and reports
// whether a fence of the lock is still pending. An answer that came in
// meanwhile is dropped.
func (l *Lock) abandon(id sm.CallerID) (fencing bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fencing = l.h.State() == sm.Uncertain || l.h.State() == sm.Recovering
	i := l.waiterIndex(id)
	if i < 0 {
		return fencing
	}
	if l.cmds.waiters.list[i].done {
		l.removeWaiter(i)
		return fencing
	}
	l.step(sm.Input{Kind: sm.InputCallerCancelled, Caller: id, Now: l.d.clock.Now()}, 0)
	if i := l.waiterIndex(id); i >= 0 {
		if l.cmds.waiters.list[i].done {
			l.removeWaiter(i) // the core answered the cancellation
		} else {
			l.cmds.waiters.list[i].gone = true // its command still runs; nobody waits for the answer
		}
	}
	return fencing
}
