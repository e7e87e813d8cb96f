package actor

import (
	"context"
	"sync"
	"time"

	sm "github.com/respire-go/respire/statemachine"
)

// KeepAlive is the driver's record of a keep-alive started on a lock
// (package lease's KeepAlive is this record with the API users call): its
// end and its context. Methods are safe for concurrent use.
type KeepAlive struct {
	lock   *Lock
	mu     sync.Mutex
	values context.Context // the starting ctx: Context keeps its values, not its cancellation; nil: none
	cause  error           // why it ended; nil while it runs
	watch  *leaseWatch     // Context and its cancel, created on first call (most are never asked for)
	// stopWatch unregisters the watch on the starting ctx (Spawn.AfterFunc's
	// stop); nil before it is registered and once undone. Whatever ends the
	// keep-alive undoes it (end), so a long-lived ctx never keeps an ended
	// keep-alive, or its Lock, reachable.
	stopWatch func() bool
}

// ownedKeepAlive stands for every keep-alive an acquisition starts
// (AcquireSpec.KeepAlive). Nobody can reach one (the lock's context tells
// how the lease ended), so all locks share this value instead of paying 64
// bytes each: a lock's keepAlive field set to it means its own keep-alive
// runs, and its end is recorded in the lock (Lock.ownedEnd). It never ends.
var ownedKeepAlive = &KeepAlive{}

// end ends the keep-alive with cause err (the first cause stays).
func (k *KeepAlive) end(err error) {
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

// watchStart makes the end of ctx, the ctx the keep-alive was started
// with, stop the keep-alive; if it ended meanwhile, nothing is registered.
func (k *KeepAlive) watchStart(ctx context.Context) {
	stop := k.lock.d.spawn.AfterFunc(ctx, func() { k.lock.stopKeepAlive(k) })
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cause != nil {
		stop() // ended before the registration: undo it at once
		return
	}
	k.stopWatch = stop
}

// Context returns the context that is cancelled when the keep-alive ends,
// with the reason as its cause; it keeps the starting ctx's values. Like
// the lock's (Lock.Context), its Err and Value are exact: they first end a
// lease whose estimate ran out on the driver's clock, so the first check
// after a pause already sees the loss, before any timer has run.
func (k *KeepAlive) Context() context.Context {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.watch == nil {
		values := context.Background()
		if k.values != nil {
			values = context.WithoutCancel(k.values)
		}
		ctx, cancel := context.WithCancelCause(values)
		k.watch = &leaseWatch{leaseCancel: leaseCancel{ctx: ctx, cancel: cancel}, lock: k.lock}
		if k.cause != nil {
			cancel(k.cause)
		}
	}
	return k.watch
}

// Err returns nil while the keep-alive runs, then why it ended. It is
// exact as Context's Err is.
func (k *KeepAlive) Err() error {
	if k.lock != nil {
		k.lock.endIfDue()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cause
}

// Lock returns the lock the keep-alive renews.
func (k *KeepAlive) Lock() *Lock { return k.lock }

// Stop stops renewing. It blocks until a renewal in flight has completed
// (and, after an uncertain one, until its connection is fenced), is
// idempotent, and never releases the lock.
func (k *KeepAlive) Stop() { k.lock.stopKeepAlive(k) }

// keepAliveRunning returns the lock's running keep-alive, nil when none:
// ownedKeepAlive for the one its acquisition started (a flag: most held
// locks have one, at no cost), else the one StartKeepAlive started (in the
// lock's side); l.mu is held (or l is not shared yet).
func (l *Lock) keepAliveRunning() *KeepAlive {
	switch {
	case l.flags.has(flagOwnedKeepAlive):
		return ownedKeepAlive
	case l.side != nil:
		return l.side.keepAlive
	}
	return nil
}

// setKeepAlive records k as the lock's running keep-alive (nil: none);
// l.mu is held (or l is not shared yet).
func (l *Lock) setKeepAlive(k *KeepAlive) {
	l.flags.set(flagOwnedKeepAlive, k == ownedKeepAlive)
	if k == ownedKeepAlive {
		k = nil
	}
	if k != nil || l.side != nil {
		l.sideLocked().keepAlive = k
	}
}

// stopKeepAlive stops k if it is the lock's keep-alive (or the lock has none
// running, so a fence after its loss is awaited).
func (l *Lock) stopKeepAlive(k *KeepAlive) {
	l.mu.Lock()
	running := l.keepAliveRunning()
	other := running != nil && running != k
	l.mu.Unlock()
	if other {
		return
	}
	_, _ = l.Request(context.Background(), sm.Input{Kind: sm.InputKeepAliveStop})
}

// StartKeepAlive starts renewing the lock in the background with k, a zero
// KeepAlive the caller allocated (package lease's is one), whose context
// keeps ctx's values and whose end ctx's end causes (ErrKeepAliveStopped).
// Only one keep-alive runs per lock: a second one fails with
// sm.ErrKeepAliveActive, one on a lock no longer held with sm.ErrNotHeld.
// It first checks, once per connection, that managed renewal may fence its
// connection (a *PermissionError otherwise, unless unfenced renewal was
// chosen). It blocks only for that check.
func (l *Lock) StartKeepAlive(ctx context.Context, k *KeepAlive) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if l.KeepAliveRunning() {
		return sm.ErrKeepAliveActive
	}
	s, err := l.d.renewalSession(ctx, l.wireKey)
	if err != nil {
		return notSentError(ctx, err)
	}
	k.lock, k.values = l, ctx
	l.mu.Lock()
	if l.keepAliveRunning() != nil {
		l.mu.Unlock()
		k.end(sm.ErrKeepAliveActive)
		return sm.ErrKeepAliveActive
	}
	l.setKeepAlive(k)
	l.renewOn(s.Node())
	id := l.newCaller(ctx)
	l.step(sm.Input{Kind: sm.InputKeepAliveStart, Caller: id, Now: l.d.clock.Now()}, id)
	res, _ := l.collect(id)
	if res.Err != nil && l.keepAliveRunning() == k {
		l.setKeepAlive(nil)
	}
	l.mu.Unlock()
	if res.Err != nil {
		k.end(res.Err)
		return res.Err
	}
	k.watchStart(ctx)
	if l.d.push != nil {
		l.d.push.watchHeld(l)
	}
	return nil
}

// ResetExpiry sets the lease to ttl (whole milliseconds, longer than the
// drift margin: checked by the caller) from now, if this handle still owns
// it: false without sending once the lock is released, lost or locally
// expired. It blocks for one round trip (plus, once per connection, the
// permission check of StartKeepAlive). The core's error, if any, is in the
// Result; a request error is returned as is.
func (l *Lock) ResetExpiry(ctx context.Context, ttl time.Duration) (sm.Result, error) {
	if ctx.Err() != nil {
		return sm.Result{}, context.Cause(ctx)
	}
	l.mu.Lock()
	released := l.h.IsReleased(l.d.clock.Now())
	l.mu.Unlock()
	if released {
		return sm.Result{}, nil
	}
	if _, err := l.d.renewalSession(ctx, l.wireKey); err != nil {
		return sm.Result{}, notSentError(ctx, err) // nothing was sent: the handle is unchanged
	}
	return l.Request(ctx, sm.Input{Kind: sm.InputResetExpiry, TTL: ttl})
}

// resetExpiryUntil is ResetExpiry to the time left until end, counted once
// the key's session is had (opening one on a new primary, or the
// permission check, can take longer than the drift margin under load): a
// switch's re-assertion so never moves the estimate past end (rule
// SwitchReassertsLocksWithoutKeepAlive). With under a millisecond left it
// sends nothing.
func (l *Lock) resetExpiryUntil(ctx context.Context, end time.Duration) (sm.Result, error) {
	if _, err := l.d.renewalSession(ctx, l.wireKey); err != nil {
		return sm.Result{}, notSentError(ctx, err)
	}
	ttl := (end - l.d.clock.Now()).Truncate(time.Millisecond)
	if ttl < time.Millisecond {
		return sm.Result{}, nil
	}
	return l.ResetExpiry(ctx, ttl)
}
