package lease

import (
	"context"
	"errors"
	"sync"
	"time"

	sm "github.com/respire-go/respire/statemachine"
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
type KeepAlive struct {
	lock   *Lock
	mu     sync.Mutex
	values context.Context // the starting ctx: Context keeps its values, not its cancellation; nil: none
	cause  error           // why it ended; nil while it runs
	watch  *leaseWatch     // Context and its cancel, created on first call (most are never asked for)
	// stopWatch unregisters the watch on the starting ctx (context.AfterFunc's
	// stop); nil before it is registered and once undone. Whatever ends the
	// keep-alive undoes it (cancel), so a long-lived ctx never keeps an ended
	// keep-alive, or its Lock, reachable.
	stopWatch func() bool
}

// ownedKeepAlive stands for every keep-alive WithKeepAlive starts. Nobody
// can reach one (Lock.Context tells how the lease ended), so all locks
// share this value instead of paying 64 bytes each: a lock's keepAlive
// field set to it means its own keep-alive runs, and its end is recorded
// in the lock (Lock.ownedEnd). It is never cancelled.
var ownedKeepAlive = &KeepAlive{}

func newKeepAlive(l *Lock, values context.Context) *KeepAlive {
	return &KeepAlive{lock: l, values: values}
}

// cancel ends the keep-alive with cause err (the first cause stays).
func (k *KeepAlive) cancel(err error) {
	if k == ownedKeepAlive {
		return // shared: the lock records its end
	}
	if err == nil {
		err = context.Canceled
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cause != nil {
		return
	}
	k.cause = err
	if k.watch != nil {
		k.watch.cancel(err)
	}
	if k.stopWatch != nil {
		k.stopWatch() // does not block: an AfterFunc already started just finds the keep-alive ended
		k.stopWatch = nil
	}
}

// watchStart makes the end of ctx, the ctx given to Lock.KeepAlive, stop
// the keep-alive; if it ended meanwhile, nothing is registered.
func (k *KeepAlive) watchStart(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { k.lock.stopKeepAlive(k) })
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cause != nil {
		stop() // ended before the registration: undo it at once
		return
	}
	k.stopWatch = stop
}

// Context returns the context protected work must honour: it is cancelled
// when the keep-alive ends, with the reason as its cause.
func (k *KeepAlive) Context() context.Context {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.watch == nil {
		values := context.Background()
		if k.values != nil {
			values = context.WithoutCancel(k.values)
		}
		ctx, cancel := context.WithCancelCause(values)
		k.watch = &leaseWatch{ctx: ctx, cancel: cancel}
		if k.cause != nil {
			cancel(k.cause)
		}
	}
	return k.watch.ctx
}

// OwnershipLost reports whether the keep-alive ended because ownership was
// lost or could not be confirmed (not for a release or a stop).
func (k *KeepAlive) OwnershipLost() bool {
	return errors.Is(k.Err(), ErrOwnershipLost)
}

// Err returns nil while the keep-alive runs, then why it ended: the cause
// of Context (see KeepAlive).
func (k *KeepAlive) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cause
}

// Stop stops renewing. It blocks until a renewal in flight has completed
// (and, after an uncertain one, until its connection is fenced), is
// idempotent, and never releases the lock: a lock still held stays held
// until Release, Close or expiry. Context is then cancelled with
// ErrKeepAliveStopped unless it had ended already.
func (k *KeepAlive) Stop() {
	k.lock.stopKeepAlive(k)
}

// stopKeepAlive stops k if it is the lock's keep-alive (or the lock has none
// running, so a fence after its loss is awaited).
func (l *Lock) stopKeepAlive(k *KeepAlive) {
	l.mu.Lock()
	other := l.keepAlive != nil && l.keepAlive != k
	l.mu.Unlock()
	if other {
		return
	}
	_, _ = l.request(context.Background(), sm.Input{Kind: sm.InputKeepAliveStop})
}

// KeepAlive starts renewing the lock in the background and returns the
// keep-alive. Only one keep-alive runs per lock: a second one fails with
// ErrKeepAliveActive, and one on a lock no longer held with ErrNotHeld. It
// first checks, once per connection, that managed renewal may fence its
// connection: without CLIENT ID or CLIENT KILL permission it returns a
// *PermissionError (matching ErrFencingNotPermitted) naming the missing
// permission, and nothing is renewed (unless the Locks was created
// WithUnfencedRenewal; the raw-token ResetExpiry always works). It blocks
// only for that check. When ctx ends later, the
// keep-alive stops (cause ErrKeepAliveStopped); ctx's values are kept. The
// keep-alive's hold on ctx (a context.AfterFunc) ends with the keep-alive,
// whatever ends it — Stop, Release, Close, a loss, Locks.Close — so a
// long-lived ctx does not keep ended locks reachable.
func (l *Lock) KeepAlive(ctx context.Context) (*KeepAlive, error) {
	if ctx.Err() != nil {
		return nil, opError("KeepAlive", l.Key(), context.Cause(ctx))
	}
	l.mu.Lock()
	active := l.h.KeepAliveActive()
	l.mu.Unlock()
	if active {
		return nil, opError("KeepAlive", l.Key(), ErrKeepAliveActive)
	}
	s, err := l.m().renewalSession(ctx, l.wireKey)
	if err != nil {
		return nil, opError("KeepAlive", l.Key(), err)
	}
	k := newKeepAlive(l, ctx)
	l.mu.Lock()
	if l.keepAlive != nil {
		l.mu.Unlock()
		k.cancel(ErrKeepAliveActive)
		return nil, opError("KeepAlive", l.Key(), ErrKeepAliveActive)
	}
	l.keepAlive = k
	l.renewOn(s.Node())
	id := l.newCaller(ctx)
	l.step(sm.Input{Kind: sm.InputKeepAliveStart, Caller: id, Now: l.m().clock.Now()}, id)
	res, _ := l.collect(id)
	if res.Err != nil && l.keepAlive == k {
		l.keepAlive = nil
	}
	l.mu.Unlock()
	if res.Err != nil {
		err := coreError(res.Err)
		k.cancel(err)
		return nil, opError("KeepAlive", l.Key(), err)
	}
	k.watchStart(ctx)
	if l.m().push != nil {
		l.m().push.watchHeld(l)
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
// handle unchanged.
func (l *Lock) ResetExpiry(ctx context.Context, ttl time.Duration) (bool, error) {
	if o := l.m().core.obs; o != nil && o.tracer != nil {
		return o.traceReset(ctx, l, func(ctx context.Context) (bool, error) { return l.resetExpiry(ctx, ttl) })
	}
	return l.resetExpiry(ctx, ttl)
}

// resetExpiry is ResetExpiry without its span.
func (l *Lock) resetExpiry(ctx context.Context, ttl time.Duration) (bool, error) {
	d, err := managedTTL(ttl, l.m().core.drift)
	if err != nil {
		return false, opError("ResetExpiry", l.Key(), err)
	}
	if ctx.Err() != nil {
		return false, opError("ResetExpiry", l.Key(), context.Cause(ctx))
	}
	l.mu.Lock()
	released := l.h.IsReleased(l.m().clock.Now())
	l.mu.Unlock()
	if released {
		return false, nil
	}
	if _, err := l.m().renewalSession(ctx, l.wireKey); err != nil {
		return false, opError("ResetExpiry", l.Key(), err)
	}
	res, err := l.request(ctx, sm.Input{Kind: sm.InputResetExpiry, TTL: d})
	if err != nil {
		return false, opError("ResetExpiry", l.Key(), err)
	}
	if res.Err != nil {
		return false, opError("ResetExpiry", l.Key(), callerError(ctx, res.Err))
	}
	return res.OK, nil
}
