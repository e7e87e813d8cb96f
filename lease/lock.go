package lease

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/respire-go/respire/actor"
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
	wireKey string // the key with the view's prefix (Key is the rest)
	token   Token

	// leaseDeadline is the handle's LeaseDeadline while Held, 0 otherwise,
	// published after every step so estimates are read without l.mu.
	leaseDeadline atomic.Int64

	mu          sync.Mutex // guards everything below but pushNext; held only for a Step and its non-blocking effects
	h           sm.Handle
	waiters     *waitList  // callers waiting for their answers; nil (back in its pool) when none
	cmds        *lockCmds  // the commands in flight; nil when none and the lock keeps alive (runtime.go)
	timers      lockTimers // its renewal and deadline timers on the Locks' timer heap (timers.go)
	renewer     *renewer   // the renewal session's node's renewer (keep-alive batches); nil: route by key
	keepAlive   *KeepAlive // the running keep-alive, nil when none
	ending      *sm.Ending // why the lease ended; nil while it lasts (see endingOf)
	watch       *leaseWatch
	acquireSpan *trace.SpanContext // the acquisition's span, with WithTracerProvider (fences link to it)
	// pushNext is the next holder of the same wire key in the push hub's
	// chain (push_hold.go); guarded by the hub's mutex.
	pushNext *Lock
	callers  sm.CallerID // last CallerID handed out
	// clientClosed: the keep-alive ended because the rueidis client was closed
	clientClosed bool
	pushed       bool // registered with the push hub as a holder (push_hold.go)
	// ownedEnd is how the keep-alive WithKeepAlive started ended (what its
	// cause would be, see ownedKeepAlive); CauseNone while it runs or if
	// there was none.
	ownedEnd sm.Cause
	// A Lock is 256 bytes (a size class): every byte is paid by each held
	// lock (TestLockStaysSmall); rarely used state belongs in side structs.
}

// leaseWatch is a context and its cancel: the lock's (created on first
// Context call, with lock set: see lockctx.go) or a keep-alive's.
type leaseWatch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	lock   *Lock // set for the lock's own context: its Err and Value check the lease's end
}

// waitList holds a lock's waiting callers while there are any. Lists are
// reused through freeWaitLists: a held lock that no caller waits on does
// not carry one.
type waitList struct {
	list []waiter
	one  [1]waiter // backing store for the usual single waiter
}

// freeWaitLists keeps waitLists for reuse. It is a channel rather than a
// sync.Pool so that reuse is certain (the race detector makes a Pool drop
// a quarter of what is put back at random, which the allocation tests
// would see as noise).
var freeWaitLists = make(chan *waitList, 1024)

func getWaitList() *waitList {
	select {
	case w := <-freeWaitLists:
		return w
	default:
		return new(waitList)
	}
}

func putWaitList(w *waitList) {
	select {
	case freeWaitLists <- w:
	default: // enough are kept
	}
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

// Key returns the lock's key without the Locks' key prefix. It does not block.
func (l *Lock) Key() string { return l.wireKey[len(l.locks.prefix):] }

// m is the managed-lock runtime the lock belongs to (its Locks' core's:
// one pointer less in every Lock).
func (l *Lock) m() *managed { return l.locks.core.managed }

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
	now := l.m().clock.Now()
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
	return max(0, deadline-l.m().clock.Now())
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
	ctx, cancel := l.m().commandContext(ctx)
	defer cancel()
	res, err := l.m().core.pool.Owner(ctx, l.wireKey)
	if err != nil {
		return false, err
	}
	return res.Owned && res.Token == l.token.wire(), nil
}

// newCaller registers a waiting caller; l.mu is held.
func (l *Lock) newCaller(ctx context.Context) sm.CallerID {
	l.callers++
	if l.callers == 0 { // wrapped after 2³² requests: 0 means "no caller" to the core
		l.callers = 1
	}
	if l.waiters == nil {
		l.waiters = getWaitList()
		l.waiters.list = l.waiters.one[:0]
	}
	l.waiters.list = append(l.waiters.list, waiter{id: l.callers, ctx: ctx})
	return l.callers
}

// waiting counts the waiting callers; l.mu is held.
func (l *Lock) waiting() int {
	if l.waiters == nil {
		return 0
	}
	return len(l.waiters.list)
}

// waiterIndex finds caller id; l.mu is held.
func (l *Lock) waiterIndex(id sm.CallerID) int {
	if l.waiters == nil {
		return -1
	}
	for i := range l.waiters.list {
		if l.waiters.list[i].id == id {
			return i
		}
	}
	return -1
}

func (l *Lock) removeWaiter(i int) {
	w := l.waiters
	w.list = append(w.list[:i], w.list[i+1:]...)
	w.list[len(w.list) : len(w.list)+1][0] = waiter{} // drop the ctx and reply
	if len(w.list) == 0 {
		*w = waitList{} // drops what the first waiter left in one if the list grew
		l.waiters = nil
		putWaitList(w)
	}
}

// resolve answers caller id; l.mu is held.
func (l *Lock) resolve(id sm.CallerID, r sm.Result) {
	i := l.waiterIndex(id)
	if i < 0 {
		return
	}
	if w := &l.waiters.list[i]; w.gone || w.reply.Send(r) {
		l.removeWaiter(i)
		return
	}
	l.waiters.list[i].result, l.waiters.list[i].done = r, true
}

// collect takes caller id's answer if it has one; l.mu is held.
func (l *Lock) collect(id sm.CallerID) (sm.Result, bool) {
	i := l.waiterIndex(id)
	if i < 0 || !l.waiters.list[i].done {
		return sm.Result{}, false
	}
	r := l.waiters.list[i].result
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
	in.Now = l.m().clock.Now()
	job := l.step(in, in.Caller)
	var ownErr error // the uncertain error of a command this caller ran
	for job.op != 0 {
		l.m().inflight.Add() // Locks.Close waits for the command and the step of its completion
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
		l.m().inflight.Done()
	}
	if res, ok := l.collect(in.Caller); ok {
		l.mu.Unlock()
		return res, nil
	}
	reply := actor.NewReply[sm.Result]()
	l.waiters.list[l.waiterIndex(in.Caller)].reply = reply
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
	l.step(sm.Input{Kind: sm.InputCallerCancelled, Caller: id, Now: l.m().clock.Now()}, 0)
	if i := l.waiterIndex(id); i >= 0 {
		l.waiters.list[i].gone = true // its command still runs; nobody waits for the answer
	}
	return fencing
}
