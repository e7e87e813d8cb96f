package lease

import (
	"context"
	"errors"

	"github.com/respire-go/respire/actor"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// FenceTimeout bounds the fence of a connection whose command's outcome is
// unknown (CLIENT KILL sent from another connection), unless
// WithCommandTimeout sets a shorter bound. A fence that gets no answer in
// time counts as failed: the lock is lost.
const FenceTimeout = actor.FenceTimeout

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
// has run. Done is closed by a timer, moments after the end on a quiet
// process and later on a busy one (a loaded machine, thousands of leases
// ending at once), even past the drift margin: guard each side effect with
// Err, not with a select on Done. Contexts made by ContextFrom, and a
// KeepAlive's Context and Err, are exact in the same way; a child made
// with context.WithCancel, WithTimeout or WithValue from this context
// keeps its own Err, which turns non-nil only when Done closes.
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
func (l *Lock) Context() context.Context { return l.core().Context() }

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

// Close stops the keep-alive (waiting for a renewal in flight), then
// releases the lock, like CloseContext with a deadline of the lease's
// remaining estimate: past the lease's end a release is moot. A delete
// whose outcome became unknown is fenced before Close returns (rule
// FenceBeforeReturn), which takes at most FenceTimeout more, so Close never
// waits longer than the remaining estimate plus FenceTimeout. It swallows what expiry
// makes harmless — connection errors, unknown outcomes, that deadline, a
// closed Locks — and returns server error replies (the lock is then still
// held). It is idempotent and safe for concurrent use.
//
// Use Close in a defer, where the work is over either way; use Release
// where the outcome matters (NotOwned says the lock had been lost).
func (l *Lock) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), l.RemainingEstimate())
	defer cancel()
	err := l.close(ctx)
	if err != nil && ctx.Err() != nil {
		return nil // the lease is over: nothing left that a release could protect
	}
	return err
}

// CloseContext is Close bounded by ctx instead: it stops the keep-alive,
// then releases the lock, and returns ctx's cause if ctx ends first; the
// lock then ends at its lease's end at the latest. If the delete's outcome
// became unknown, CloseContext returns only once its connection was fenced
// (at most FenceTimeout after ctx's end; ErrFencePending when the fence did
// not answer). It swallows connection errors and unknown outcomes like
// Close.
func (l *Lock) CloseContext(ctx context.Context) error {
	return l.close(ctx)
}

func (l *Lock) close(ctx context.Context) error {
	res, err := l.core().StopAndRelease(ctx)
	if err != nil {
		return opError("Close", l.Key(), err)
	}
	if res.Err != nil && res.Outcome == sm.OutcomeDefinite && !errors.Is(res.Err, conn.ErrPoolClosed) {
		return opError("Close", l.Key(), res.Err)
	}
	if res.Err != nil && ctx.Err() != nil {
		return opError("Close", l.Key(), res.Err) // ctx ended first (its cause, and the fence's answer, are in res.Err)
	}
	return nil
}
