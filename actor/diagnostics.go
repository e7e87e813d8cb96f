package actor

import (
	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file tells what the driver holds right now: for tests that check
// the driver from outside (package lease's), and for debugging. Each call
// takes the mutexes it needs briefly and changes nothing.

// ArmedTimers counts the renewal and deadline timers armed on the driver's
// timer heap.
func (d *Driver) ArmedTimers() int { return d.timers.armed() }

// WaitIdle blocks until the lock commands in flight and the background work
// (fences, clean-ups, push reads) started so far have ended.
func (d *Driver) WaitIdle() {
	d.inflight.Wait()
	d.background.Wait()
}

// Waiters counts the callers waiting for an answer of the lock.
func (l *Lock) Waiters() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waitersLocked() == nil {
		return 0
	}
	return len(l.cmds.waiters.list)
}

// HasCommandSlots reports whether the lock keeps its command slots (a
// keep-alive lock gives them back whenever no command is in flight).
func (l *Lock) HasCommandSlots() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cmds != nil
}

// PushStats counts what the push hub did (all zero without push).
type PushStats struct {
	Reads             int // waiters' tracked reads (arming)
	HolderReads       int // holders' owner-compared reads
	HolderReadsPeak   int // most holders' reads in flight at once
	HolderBatches     int // batches of them sent (one WatchReadMany each)
	HolderBatchesPeak int // most batches in flight at once
	HolderBatchMax    int // most reads in one batch
	Refuted           int // held locks ended by a read
	Batons            int // waiters woken to try
	HandOvers         int // waiters whose try a release carried (push_handover.go)
}

// PushStats returns what the push hub did so far.
func (d *Driver) PushStats() PushStats {
	h := d.push
	if h == nil {
		return PushStats{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.stats
	return PushStats{Reads: s.reads, HolderReads: s.holderReads, HolderReadsPeak: s.holderReadsPeak,
		HolderBatches: s.holderBatches, HolderBatchesPeak: s.holderBatchesPeak, HolderBatchMax: s.holderBatchMax,
		Refuted: s.refuted, Batons: s.batons, HandOvers: s.handOvers}
}

// PushKey is the push hub's state of one wire key.
type PushKey struct {
	Entry        bool // the key has an entry (waiters, or a holders' read due)
	Armed        bool // a tracked read answered and no invalidation came since
	Waiters      int  // waiting acquisitions
	BatonOut     bool // a waiter was woken to try and has not come back
	Holders      int  // keep-alive holders registered for the key
	Queued       bool // a holders' read is queued
	Reading      bool // a holders' read is in flight
	Recheck      bool // a change came during that read
	RetryPending bool // a failed holders' read will be tried again
}

// PushKey returns the push hub's state of wireKey.
func (d *Driver) PushKey(wireKey string) PushKey {
	h := d.push
	if h == nil {
		return PushKey{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var k PushKey
	for l := h.held.get(wireKey); l != nil; l = h.held.nextOf(l) {
		k.Holders++
	}
	k.RetryPending = h.retries[wireKey] != nil
	if e := h.keys[wireKey]; e != nil {
		k.Entry, k.Armed, k.Waiters, k.BatonOut = true, e.armed, len(e.waiters), e.baton != nil
		k.Queued, k.Reading, k.Recheck = e.queued, e.check, e.recheck
	}
	return k
}

// PushEntries counts the keys with an entry in the push hub.
func (d *Driver) PushEntries() int {
	if d.push == nil {
		return 0
	}
	d.push.mu.Lock()
	defer d.push.mu.Unlock()
	return len(d.push.keys)
}

// PushRetries counts the holders' reads waiting to be tried again.
func (d *Driver) PushRetries() int {
	if d.push == nil {
		return 0
	}
	d.push.mu.Lock()
	defer d.push.mu.Unlock()
	return len(d.push.retries)
}

// HolderChecks returns the holders' reads in flight, their batches, the
// keys queued for one and the workers running.
func (d *Driver) HolderChecks() (reading, batches, queued, workers int) {
	if d.push == nil {
		return 0, 0, 0, 0
	}
	h := d.push
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.checks.reading, h.checks.batches, h.checks.pending(), h.checks.workers
}

// Invalidated hands the push hub an invalidation of keys on node (nil: all
// tracked there), as the transport's watcher does.
func (d *Driver) Invalidated(node string, keys []string) {
	if d.push != nil {
		d.push.onInvalidate(node, keys)
	}
}

// PushHolders returns the keep-alive holders chained for wireKey in the
// push hub, the latest first.
func (d *Driver) PushHolders(wireKey string) []*Lock {
	if d.push == nil {
		return nil
	}
	d.push.mu.Lock()
	defer d.push.mu.Unlock()
	var chain []*Lock
	for l := d.push.held.get(wireKey); l != nil; l = d.push.held.nextOf(l) {
		chain = append(chain, l)
	}
	return chain
}

// OwnedKeepAliveErr is what the cause of the keep-alive the lock's
// acquisition started would be: nil while it runs (or when there was
// none), then how it ended.
func (l *Lock) OwnedKeepAliveErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.flags.has(flagOwnedKeepAlive) || l.ownedEnd() == sm.CauseNone:
		return nil
	case l.ownedEnd() == sm.CauseStopped && l.flags.has(flagClientClosed):
		return conn.ErrClientClosed
	}
	return endingError(sm.Ending{Cause: l.ownedEnd()})
}

// Jitter returns the driver's source of polling jitter.
func (d *Driver) Jitter() func() float64 { return d.jitter }

// UseClock makes the driver read time from c and draw polling jitter from
// jitter, from now on: for tests that drive a driver already in use on a
// virtual clock. Call it while no lock of the driver is held.
func (d *Driver) UseClock(c Clock, jitter func() float64) {
	d.clock, d.jitter = c, jitter
}

// DisableHandOver turns the hand-over off for d (push_handover.go): its
// releases go alone, as after an error reply to one. For tests of what
// happens without it (a waiter of another process gets the same).
func (d *Driver) DisableHandOver() { d.handOverOff.Store(true) }
