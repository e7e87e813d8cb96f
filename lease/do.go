package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrLostDuringWork matches Do's error when the lock ended before the
// release that follows fn — lost, expired, its renewals refused — or the
// release found the key no longer ours: the work may have overlapped
// another owner's. The *WorkError that matches it also matches the cause
// (ErrOwnershipLost, a *LossError, …) and fn's own error.
var ErrLostDuringWork = errors.New("lease: the lock was lost while the work ran")

// WorkError is Do's error when the work did not simply run under the lock
// and see it released: Lost says why the lock ended before its release (the
// work may have overlapped another owner's), Release what the release that
// followed the work returned (an error matching ErrOutcomeUnknown: the
// delete may or may not have run, and the lock counts as lost; one matching
// ErrNotSubmitted, the delete not sent, or a server error reply: the key
// stays until its lease ends, nothing renewing it), and Work what fn
// returned. Unset fields are nil. It matches ErrLostDuringWork when Lost is
// set, and every error it holds (errors.Is, errors.As). It never includes a
// token.
type WorkError struct {
	Key     string // the lock key, without the Locks' key prefix
	Lost    error  // why the lock ended before the release (its Context's cause)
	Release error  // the release's error
	Work    error  // fn's error
}

// Error reads "lease: Do "key": " and what happened, the loss first, each
// fact once: "the lock was lost while the work ran: HOW", "after the
// work: WHAT THE RELEASE MET", "the work failed: FN'S ERROR". fn's error
// is left out of the text (not of Unwrap) when it only echoes the loss:
// the loss itself (fn returned context.Cause(ctx)) or the bare
// context.Canceled of its ended context (fn returned ctx.Err()).
func (e *WorkError) Error() string {
	var parts []string
	if e.Lost != nil {
		loss := strings.TrimPrefix(strings.TrimPrefix(reasonText(e.Lost), "ownership lost"), ": ")
		parts = append(parts, strings.TrimSuffix("the lock was lost while the work ran: "+loss, ": "))
	}
	if e.Release != nil {
		parts = append(parts, "after the work: "+reasonText(e.Release))
	}
	if e.Work != nil && !e.echoesLoss() {
		parts = append(parts, "the work failed: "+reasonText(e.Work))
	}
	return fmt.Sprintf("lease: Do %q: %s", e.Key, strings.Join(parts, "; "))
}

// echoesLoss reports whether fn's error only repeats the loss.
func (e *WorkError) echoesLoss() bool {
	return e.Lost != nil && (e.Work == context.Canceled || e.Work.Error() == e.Lost.Error())
}

// reasonText is err's text without this package's prefix and, for a
// call's *OpError, without the call: the reason alone.
func reasonText(err error) string {
	if op, ok := err.(*OpError); ok {
		err = op.Err
	}
	return strings.TrimPrefix(err.Error(), "lease: ")
}

// Is reports whether target is ErrLostDuringWork and the lock was lost.
func (e *WorkError) Is(target error) bool { return target == ErrLostDuringWork && e.Lost != nil }

// Unwrap returns the errors it holds: Lost, Release, Work (those set).
func (e *WorkError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Lost, e.Release, e.Work} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Do runs fn while holding key: it acquires the lock with a lease of ttl
// and a keep-alive (opts as for Acquire: WithWait or WithWaitUntilDone to
// wait, WithOwner, WithRetryEvery; WithKeepAlive is implied), runs fn under
// a context derived from ctx that also ends, with the cause, when the lease
// does (Lock.ContextFrom), then releases the lock, whatever fn returned. It
// blocks until then; it is safe for concurrent use.
//
// It returns:
//   - the acquisition's error when the lock was not acquired (an error
//     matching ErrNotAcquired when another owner held it for the whole
//     wait); fn did not run;
//   - nil when fn returned nil and the release deleted the lock;
//   - fn's error, as is (not wrapped), when fn failed and the release
//     deleted the lock;
//   - otherwise a *WorkError: matching ErrLostDuringWork (and the cause, a
//     *LossError or ErrOwnershipLost …) when the lock ended before fn's
//     end was followed by its release, or the release found the key no
//     longer ours — the work may have overlapped another owner's — and
//     matching the release's error when the release failed
//     (ErrOutcomeUnknown: its outcome is unknown; ErrNotSubmitted: the
//     delete was not sent; a server error reply); fn's error, if any, is
//     in it too.
//
// ctx bounds the acquisition and is the parent of fn's context; the
// release runs even when ctx has ended (bounded by the lease's remaining
// estimate plus FenceTimeout, as Close is). Do never leaves a live lock
// behind, whatever the release returned: after a failed release it stops
// the keep-alive before it returns, so nothing renews the lease afterwards
// and a lock still held ends at its lease's end at the latest. A panic in
// fn releases the lock (as Close does) and goes on. fn nil is refused with
// ErrInvalidOption before anything is sent.
func (l *Locks) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error,
	opts ...AcquireOption) error {
	if fn == nil {
		return opError("Do", key, fmt.Errorf("%w: nil work function", ErrInvalidOption))
	}
	lock, err := l.Acquire(ctx, key, ttl, append(opts[:len(opts):len(opts)], WithKeepAlive())...)
	if err != nil {
		return err
	}
	workErr := lock.runWork(ctx, fn)
	lost := context.Cause(lock.Context()) // nil while held: Err and Cause are exact (see Context)
	released, releaseErr := lock.releaseAfterWork(ctx)
	if lost == nil && releaseErr == nil && !released {
		// The release found the key not ours: lost at some point before it.
		if lost = context.Cause(lock.Context()); lost == nil {
			lost = ErrOwnershipLost
		}
	}
	if lost == nil && releaseErr == nil {
		return workErr
	}
	return &WorkError{Key: key, Lost: lost, Release: releaseErr, Work: workErr}
}

// runWork runs fn under the lease's context derived from ctx; a panic in
// fn closes the lock (releasing it) before it goes on.
func (l *Lock) runWork(ctx context.Context, fn func(ctx context.Context) error) error {
	workCtx, cancel := l.ContextFrom(ctx)
	defer cancel()
	finished := false
	defer func() {
		if !finished {
			_ = l.Close()
		}
	}()
	err := fn(workCtx)
	finished = true
	return err
}

// releaseAfterWork releases the lock after Do's work, under ctx's values
// but not its end, bounded as Close is; released reports that its delete
// removed the lock. Whatever the release returned, the lock's keep-alive
// does not outlive it: after an error it is stopped (waiting for a renewal
// in flight, within the same bound), so that a lock still held — its
// delete not sent, or refused — ends at its lease's end at the latest.
func (l *Lock) releaseAfterWork(ctx context.Context) (released bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.RemainingEstimate()+FenceTimeout)
	defer cancel()
	out, err := l.Release(ctx)
	if err != nil {
		l.core().StopKeepAlive(ctx)
		return false, err
	}
	return out == Released, nil
}
