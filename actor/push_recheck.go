package actor

import (
	"context"
	"time"
)

// This file is the read a waiter woken by a change makes before it tries
// SET NX (rule PushIgnoresOthersRenewals). Every renewal of a key — by a
// holder in another process, whose change this Locks cannot tell from a
// release — invalidates it, and tracking is one-shot, so the woken waiter
// must read the key again anyway to keep it tracked. It reads first: a key
// still held (by the same owner after a renewal, or by a new one) would
// refuse the SET NX, and the read has tracked it again, so the waiter
// parks once more without trying. Only a key found missing, or changed
// again during the read, or a read that failed or took longer than
// pushReadBound, is tried at once. A
// renewal thus costs each waiting process one tracked read instead of a
// SET NX and a read; a release costs it a read before its SET NX.

// passChangedLocked hands the baton to the first waiter because key
// changed (an invalidation), marking a fresh baton for the read before the
// try, unless a lock of this Locks is releasing the key: the change is
// then most likely its delete, whose push often comes before the release's
// reply, and the waiter tries at once (push_handoff.go); h.mu is held.
func (h *pushHub) passChangedLocked(e *pushKey) {
	fresh := e.baton == nil && len(e.waiters) > 0
	h.passBatonLocked(e)
	if fresh && e.releasing == 0 {
		e.verify = true
	}
}

// parkUntilTry parks w for sleep, then, each time it was woken with a
// baton that a read finds needs no try (the key is still held, and tracked
// again), for parked, until a wake calls for a SET NX or ctx ends.
func (h *pushHub) parkUntilTry(ctx context.Context, key string, w *pushWaiter, sleep, parked time.Duration) error {
	for {
		if err := h.park(ctx, w, sleep); err != nil {
			return err
		}
		if !h.heldAfterChange(ctx, key, w) {
			return nil
		}
		sleep = parked
	}
}

// heldAfterChange reports whether w, woken with a baton an invalidation
// passed, found the key held by a read made now on its watcher (which
// tracks it again): it then gives the baton back and must not try. It
// reports false — try now — when w was woken otherwise (its sleep, a key
// found free, a baton handed on), or the key was found missing, or changed
// again during the read, or the read failed.
func (h *pushHub) heldAfterChange(ctx context.Context, key string, w *pushWaiter) bool {
	h.mu.Lock()
	e := h.entry(key)
	if e.baton != w || !e.verify || e.missed || ctx.Err() != nil {
		h.mu.Unlock()
		return false
	}
	if e.arming && !e.member {
		// Another read of the key is in flight (a waiter's, or the one for
		// the waiters left after one took the key) and will see this
		// change: a waiter reading then tries if the key is free or changed,
		// the read for the others reads again or hands the baton on. Give
		// the baton back and park.
		e.verify, e.baton = false, nil
		h.mu.Unlock()
		return true
	}
	e.verify, e.arming = false, true
	gen := e.gen
	h.mu.Unlock()
	// Bounded (pushReadBound): a watcher that does not answer delays the
	// try by that much at most.
	readCtx, cancel := h.d.bound(ctx, pushReadBound)
	_, _, found, err := h.d.transport.WatchRead(readCtx, key)
	cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	e = h.entry(key)
	e.arming = false
	h.stats.reads++
	if err == nil && !found {
		h.keyMissingLocked(key)
	}
	if err != nil || !found || e.gen != gen || e.missed {
		// The try is sent after every change seen so far: a change during
		// the read needs no second try when the waiter comes back.
		e.missed = false
		return false
	}
	e.armed, e.baton = true, nil
	select {
	case <-w.wake: // a sleep that ended meanwhile: the key is tracked again
	default:
	}
	return true
}
