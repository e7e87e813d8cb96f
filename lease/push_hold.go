package lease

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// watchHeld makes a keep-alive holder learn of its key's change at once:
// the key is tracked (the first read also confirms the acquisition), and
// each invalidation is followed by an owner-compared read on the watcher,
// which tracks the key again. A read that finds the key missing or another
// owner's ends the lock (LossReadRefused). Its own renewals change the key
// too: the read then finds the lock's token and nothing happens.
func (h *pushHub) watchHeld(l *Lock) {
	l.mu.Lock()
	if l.pushed || l.h.State() != sm.Held {
		l.mu.Unlock()
		return
	}
	l.pushed = true
	l.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entry(l.wireKey)
	e.holders = append(e.holders, l)
	h.startCheckLocked(l.wireKey, e)
}

// unwatchHeld forgets a holder whose lease ended; l.mu is held (it is
// called from the lease's end).
func (h *pushHub) unwatchHeld(l *Lock) {
	if !l.pushed {
		return
	}
	l.pushed = false
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.keys[l.wireKey]
	if e == nil {
		return
	}
	for i, x := range e.holders {
		if x == l {
			e.holders = append(e.holders[:i], e.holders[i+1:]...)
			break
		}
	}
	h.forget(l.wireKey, e)
}

// startCheckLocked starts the holders' owner-compared read of key, or asks
// the one in flight for another round; h.mu is held.
func (h *pushHub) startCheckLocked(key string, e *pushKey) {
	if e.check {
		e.recheck = true
		return
	}
	if h.closed {
		return
	}
	e.check = true
	h.m.goBackground(func() { h.runCheck(key) })
}

// runCheck reads key on its watcher (tracking it again) and ends every
// holder whose token it does not find, once more while invalidations came
// during the read.
func (h *pushHub) runCheck(key string) {
	for {
		h.mu.Lock()
		e := h.entry(key)
		e.recheck = false
		gen := e.gen
		// Only holders registered before the read is sent can be judged by
		// it: one registered later took the key after the read may have
		// run (its registration asked for another round).
		judged := slices.Clone(e.holders)
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), pushCheckTimeout)
		_, token, found, err := h.m.core.pool.WatchRead(ctx, key)
		cancel()
		h.mu.Lock()
		h.stats.holderReads++
		var refuted []*Lock
		if err != nil || !found {
			h.passBatonLocked(e) // free, or unknown: the next local waiter tries
		}
		if err == nil {
			e.armed = e.armed || e.gen == gen
			for _, l := range judged {
				if (!found || token != l.token.wire()) && slices.Contains(e.holders, l) {
					refuted = append(refuted, l)
				}
			}
		}
		again := e.recheck && err == nil && len(e.holders) > 0
		if !again {
			e.check = false
			if err != nil && len(e.holders) > 0 && retriableRead(err) {
				h.retryCheckLocked(key) // the node is unreachable: read again once it answers
			}
			h.forget(key, e)
		}
		h.mu.Unlock()
		for _, l := range refuted {
			if l.pushRefuted() {
				h.mu.Lock()
				h.stats.refuted++
				h.mu.Unlock()
			}
		}
		if !again {
			return
		}
	}
}

// pushCheckRetry is the pause before a holder's read that failed (the
// node or its watcher unreachable) is tried again.
const pushCheckRetry = 250 * time.Millisecond

// retryCheckLocked reads key again for its holders after pushCheckRetry,
// unless they are gone or Locks.Close began by then; h.mu is held.
func (h *pushHub) retryCheckLocked(key string) {
	if h.closed || h.retries[key] != nil {
		return
	}
	if h.retries == nil {
		h.retries = map[string]actor.Timer{}
	}
	h.retries[key] = h.m.clock.AfterFunc(pushCheckRetry, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.retries, key)
		if e := h.keys[key]; e != nil && len(e.holders) > 0 {
			h.startCheckLocked(key, e)
		}
	})
}

// pushRefuted ends the lock after a read proved the key is not ours (only
// a Held handle moves: see statemachine's stepOwnerRefuted) and reports
// whether it did.
func (l *Lock) pushRefuted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := l.h.State() == sm.Held
	l.step(sm.Input{Kind: sm.InputOwnerRefuted, Now: l.m.clock.Now()}, 0)
	return held
}

// retriableRead reports whether a holder's failed read is worth another
// try: not when the node refused tracking, the client was closed or the
// pool is closing.
func retriableRead(err error) bool {
	return !errors.Is(err, conn.ErrTrackingRefused) && !errors.Is(err, conn.ErrClientClosed) &&
		!errors.Is(err, conn.ErrPoolClosed)
}
