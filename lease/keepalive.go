package lease

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/actor"
)

// KeepAlive renews a Lock in the background at about half its lease, until
// stopped or until ownership can no longer be guaranteed. Its Context is
// cancelled, before the lease could have expired on the server, when
// renewals stop succeeding; context.Cause tells why: a *LossError or a
// *RenewalFailureError (both match ErrOwnershipLost), ErrReleased (the lock
// was released), ErrKeepAliveStopped (stopped; the lock may still be held)
// or ErrClientClosed (the rueidis client was closed under the Locks).
// Protected work usually runs under Lock.Context instead, which ends when
// the lease ends for any reason. Methods are safe for concurrent use.
// Create it with Lock.KeepAlive.
//
// A KeepAlive is the driver's record of it (package actor) with this
// package's API: the same memory.
type KeepAlive actor.KeepAlive

func (k *KeepAlive) core() *actor.KeepAlive { return (*actor.KeepAlive)(k) }

// Context returns the context protected work must honour: it is cancelled
// when the keep-alive ends, with the reason as its cause. Its Err and
// context.Cause are exact, as Lock.Context's are: they compare the
// monotonic clock with the lease's end when called, so the first check
// after a pause past the lease (SIGSTOP, a long GC) reports the loss before
// any timer has run; Done is closed by a timer, moments after the end. It
// does not block.
func (k *KeepAlive) Context() context.Context { return k.core().Context() }

// OwnershipLost reports whether the keep-alive ended because ownership was
// lost or could not be confirmed (not for a release or a stop).
func (k *KeepAlive) OwnershipLost() bool {
	return errors.Is(k.Err(), ErrOwnershipLost)
}

// Err returns nil while the keep-alive runs, then why it ended: the cause
// of Context (see KeepAlive). It is exact as Context's Err is.
func (k *KeepAlive) Err() error { return k.core().Err() }

// Stop stops renewing. It blocks until a renewal in flight has completed
// (and, after an uncertain one, until its connection is fenced), is
// idempotent, and never releases the lock: a lock still held stays held
// until Release, Close or expiry. Context is then cancelled with
// ErrKeepAliveStopped unless it had ended already.
func (k *KeepAlive) Stop() { k.core().Stop() }

// KeepAlive starts renewing the lock in the background and returns the
// keep-alive. Only one keep-alive runs per lock: a second one fails with
// ErrKeepAliveActive, and one on a lock no longer held with ErrNotHeld. It
// first checks, once per connection, that managed renewal may fence its
// connection: without CLIENT ID or CLIENT KILL permission it returns a
// *PermissionError (matching ErrFencingNotPermitted) naming the missing
// permission, and nothing is renewed (unless the Locks was created
// WithUnfencedRenewal; the raw-token ResetExpiry always works); a check
// that got no answer returns an error matching ErrNotSubmitted (ctx's
// cause, as is, when ctx ended), nothing started, and may be tried again.
// It blocks only for that check. When ctx ends later, the
// keep-alive stops (cause ErrKeepAliveStopped); ctx's values are kept. The
// keep-alive's hold on ctx (a context.AfterFunc) ends with the keep-alive,
// whatever ends it — Stop, Release, Close, a loss, Locks.Close — so a
// long-lived ctx does not keep ended locks reachable.
func (l *Lock) KeepAlive(ctx context.Context) (*KeepAlive, error) {
	k := new(KeepAlive)
	if err := l.core().StartKeepAlive(ctx, k.core()); err != nil {
		return nil, opError("KeepAlive", l.Key(), err)
	}
	return k, nil
}

// ResetExpiry sets the lease to ttl (rounded up to whole milliseconds) from
// now, if this handle still owns it. It returns false, without sending
// anything, once the lock is released, lost or locally expired; a false
// from the server (the key expired or has another owner) makes the handle
// lost, and later calls return false without sending. Do not retry
// protected writes after false. Resets apply in request order. It blocks
// for one round trip (plus, once per connection, the permission check of
// KeepAlive; without CLIENT permission it returns a *PermissionError,
// unless the Locks was created WithUnfencedRenewal).
//
// If ctx ends after the renewal was sent, its outcome is unknown: the handle
// gives ownership up (keep-alive cancelled first), fences the connection
// with CLIENT KILL, and returns the error. A server error reply leaves the
// handle unchanged, and so does a renewal not sent — ctx ended first (its
// cause is returned, as is), or the permission check got no answer — with
// false and an error matching ErrNotSubmitted: the lock is still held.
func (l *Lock) ResetExpiry(ctx context.Context, ttl time.Duration) (bool, error) {
	if o := l.obs(); o != nil && o.tracer != nil {
		return o.traceReset(ctx, l, func(ctx context.Context) (bool, error) { return l.resetExpiry(ctx, ttl) })
	}
	return l.resetExpiry(ctx, ttl)
}

// resetExpiry is ResetExpiry without its span.
func (l *Lock) resetExpiry(ctx context.Context, ttl time.Duration) (bool, error) {
	d, err := managedTTL(ttl, l.core().Driver().Drift())
	if err != nil {
		return false, opError("ResetExpiry", l.Key(), err)
	}
	res, err := l.core().ResetExpiry(ctx, d)
	if err != nil {
		return false, opError("ResetExpiry", l.Key(), err)
	}
	if res.Err != nil {
		return false, opError("ResetExpiry", l.Key(), callerError(ctx, res.Err))
	}
	return res.OK, nil
}
