package lease

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// FenceTimeout bounds the fence of a connection whose command's outcome is
// unknown (CLIENT KILL sent from another connection), unless
// WithCommandTimeout sets a shorter bound. A fence that gets no answer in
// time counts as failed: the lock is lost.
const FenceTimeout = 5 * time.Second

// Context returns a context that is cancelled when the lease ends, for any
// reason, with the reason as its cause (context.Cause):
//
//   - ErrReleased: this handle released the lock (Release or Close).
//   - ErrExpired: the lease's local estimate ran out with no renewal; it is
//     cancelled before the lease could have expired on the server, by the
//     drift margin (see WithDriftMargin).
//   - *LossError (matching ErrOwnershipLost): a renewal or the release found
//     another owner, a command's outcome became unknown, or the lease
//     deadline passed without a confirmed renewal; LossError.Reason says
//     which and Err wraps the error behind it.
//   - *RenewalFailureError (matching ErrOwnershipLost): a renewal failed.
//
// Run the work the lock protects under this context. A keep-alive
// (WithKeepAlive or KeepAlive) renews the lease and so moves its end; a
// stopped keep-alive leaves the lease to run out. The end counts every
// command in flight: a ResetExpiry that shortens the lease ends the context
// by the shorter deadline, counted from its send, even before its reply.
//
// Err and context.Cause are exact: they compare the monotonic clock with
// the lease's end when called, so the first check after the process
// resumes from a pause (SIGSTOP, a stop-the-world GC, a descheduled
// thread) already reports a lease that ran out meanwhile, before any timer
// has run. Done is closed by a timer, moments after the end. Contexts made
// by ContextFrom are exact in the same way; a child made with
// context.WithCancel, WithTimeout or WithValue from this context keeps its
// own Err, which turns non-nil only when Done closes.
//
// What no lease can do: a pause between the check and the side effect it
// guards (the process stops after Err returned nil, and writes after the
// lease ended and another owner took the key), or a pause the monotonic
// clock does not count (the whole machine suspended). Give the protected
// resource a fencing token to refuse such a stale write (coordination
// package, docs/fencing.md).
//
// The context carries no values and no deadline; combine it with a
// request's context with ContextFrom. It is created on the first call (a
// lock that never asks for it pays nothing) and the same context is
// returned afterwards. It does not block, and is safe for concurrent use.
func (l *Lock) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watch == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		l.watch = &leaseWatch{ctx: ctx, cancel: cancel, lock: l}
		if l.ending != nil {
			cancel(l.endingCause(*l.ending))
		} else {
			l.step(sm.Input{Kind: sm.InputWatch, Now: l.m().clock.Now()}, 0)
			l.observeLocked()
		}
	}
	return l.watch
}

// Deadline implements context.Context: the lock's context has none.
func (w *leaseWatch) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context: closed by a timer once the lease ended.
func (w *leaseWatch) Done() <-chan struct{} { return w.ctx.Done() }

// Err implements context.Context exactly: a lease whose end has passed on
// the monotonic clock is ended now, synchronously, before Err answers.
func (w *leaseWatch) Err() error {
	w.lock.endIfDue()
	return w.ctx.Err()
}

// Value implements context.Context. It checks the lease's end first, so
// that context.Cause (which reads the cause through Value) is exact too.
func (w *leaseWatch) Value(key any) any {
	w.lock.endIfDue()
	return w.ctx.Value(key)
}

// String names the context without revealing anything of the lock.
func (w *leaseWatch) String() string { return "lease.Lock.Context" }

// endIfDue ends the lease now if its estimate ran out: the check of the
// lock's exact Err. It takes l.mu only when the end is due.
func (l *Lock) endIfDue() {
	deadline := time.Duration(l.leaseDeadline.Load())
	if deadline == 0 || l.m().clock.Now() < deadline {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observeLocked()
}

// ContextFrom returns a context derived from parent that is also
// cancelled when the lease ends, with the lease's cause (see Context): run
// a request's work under it so that it stops on whichever comes first, the
// request's end or the lease's. Its Err and context.Cause are exact, as
// Context's are. Call cancel when the work is done, to free the watch; it
// does not release the lock. It does not block.
func (l *Lock) ContextFrom(parent context.Context) (context.Context, context.CancelFunc) {
	lease := l.Context()
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(lease, func() { cancel(context.Cause(lease)) })
	return &derivedContext{Context: ctx, lease: lease, cancel: cancel}, func() {
		stop()
		cancel(context.Canceled)
	}
}

// derivedContext is a ContextFrom context: ctx, whose Err and Value first
// end it with the lease's cause when the lease's exact Err says it ended.
type derivedContext struct {
	context.Context // the child of parent, cancelled with the lease's cause
	lease           context.Context
	cancel          context.CancelCauseFunc
}

// Err implements context.Context exactly (see Lock.Context).
func (c *derivedContext) Err() error {
	c.endIfLeaseEnded()
	return c.Context.Err()
}

// Value implements context.Context, checking the lease first (context.Cause).
func (c *derivedContext) Value(key any) any {
	c.endIfLeaseEnded()
	return c.Context.Value(key)
}

func (c *derivedContext) endIfLeaseEnded() {
	if c.Context.Err() == nil && c.lease.Err() != nil {
		c.cancel(context.Cause(c.lease))
	}
}

// endLease records why the lease ended and ends the lock's context, if
// any; l.mu is held.
func (l *Lock) endLease(why sm.Ending) {
	l.ending = endingOf(why)
	if l.pushed {
		l.m().push.unwatchHeld(l)
	}
	if l.watch != nil {
		l.watch.cancel(l.endingCause(why))
	}
}

// plainEndings holds every ending without an error, so that recording
// the usual end of a lease (released, expired, refused) allocates nothing.
var plainEndings = func() (t [8][8]sm.Ending) {
	for c := range t {
		for r := range t[c] {
			t[c][r] = sm.Ending{Cause: sm.Cause(c), Reason: sm.Reason(r)}
		}
	}
	return t
}()

// endingOf returns why as a pointer to keep in a Lock (8 bytes, not 24):
// a shared one when it carries no error.
func endingOf(why sm.Ending) *sm.Ending {
	if why.Err == nil && int(why.Cause) < len(plainEndings) && int(why.Reason) < len(plainEndings[0]) {
		return &plainEndings[why.Cause][why.Reason]
	}
	failure := why // escapes: copied here, not at every call
	return &failure
}

// endingCause is the lock context's cause for why; l.mu is held. A lease
// that ran out after the rueidis client was closed says both.
func (l *Lock) endingCause(why sm.Ending) error {
	if why.Cause == sm.CauseExpired && l.clientClosed {
		return expiredError{ErrClientClosed}
	}
	return endingError(why)
}

// expiredError is ErrExpired with the reason no renewal came.
type expiredError struct{ why error }

func (e expiredError) Error() string {
	return ErrExpired.Error() + ": " + strings.TrimPrefix(e.why.Error(), "lease: ")
}
func (e expiredError) Unwrap() error        { return e.why }
func (e expiredError) Is(target error) bool { return target == ErrExpired }

// Close stops the keep-alive (waiting for a renewal in flight), then
// releases the lock, like CloseContext with a deadline of the lease's
// remaining estimate plus FenceTimeout: past the lease's end a release is
// moot, so Close never waits longer than that. It swallows what expiry
// makes harmless — connection errors, unknown outcomes, that deadline, a
// closed Locks — and returns server error replies (the lock is then still
// held). It is idempotent and safe for concurrent use.
//
// Use Close in a defer, where the work is over either way; use Release
// where the outcome matters (NotOwned says the lock had been lost).
func (l *Lock) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), l.RemainingEstimate()+FenceTimeout)
	defer cancel()
	err := l.close(ctx)
	if err != nil && ctx.Err() != nil {
		return nil // the lease is over: nothing left that a release could protect
	}
	return err
}

// CloseContext is Close bounded by ctx instead: it stops the keep-alive,
// then releases the lock, and returns ctx's cause (or ErrFencePending) if
// ctx ends first; the lock then ends at its lease's end at the latest. It
// swallows connection errors and unknown outcomes like Close.
func (l *Lock) CloseContext(ctx context.Context) error {
	return l.close(ctx)
}

func (l *Lock) close(ctx context.Context) error {
	res, err := l.request(ctx, sm.Input{Kind: sm.InputClose})
	if err != nil {
		if ctx.Err() != nil {
			// ctx ended before Close could stop the keep-alive (it may not
			// have stepped at all): stop it now, or it would renew the lease
			// for ever instead of letting it end.
			l.stopKeepAliveNow()
		}
		return opError("Close", l.Key(), err)
	}
	if res.Err != nil && res.Outcome == sm.OutcomeDefinite && !errors.Is(res.Err, conn.ErrPoolClosed) {
		return opError("Close", l.Key(), res.Err)
	}
	return nil
}

// stopKeepAliveNow stops the lock's keep-alive, if one is active, without
// waiting for a renewal in flight. It does not block.
func (l *Lock) stopKeepAliveNow() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.h.KeepAliveActive() {
		l.step(sm.Input{Kind: sm.InputKeepAliveStop, Now: l.m().clock.Now()}, 0)
	}
}
