package lease

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file is the holders' side of the push hub: keep-alive holders are
// chained per wire key in pushHub.held (no pushKey while their key is
// tracked), and each invalidation of a held key queues it, once, for an
// owner-compared read that one of at most pushCheckWorkers workers does.

// pushCheckWorkers bounds the holders' reads in flight, and so the
// goroutines that do them (a worker exits once the queue is empty). Every
// renewal of our own invalidates the key (tracking is one-shot), so
// 100,000 held locks renewing every 5 s need 20,000 reads a second, plus
// one per acquisition; one goroutine per read kept thousands alive around
// renewal bursts (one per held key after a reconnect). A read is bound by
// its round trip (pipelined with the others on the watcher), not by the
// server, so the reads a second grow with the reads in flight: in
// BenchmarkHeldKeepAlive (100,000 locks, 2 shared cores) 8 workers did
// about 7,000 a second while the locks were taken, leaving up to 71,000
// keys queued (each with its entry, and its loss detection late) for
// seconds, 32 up to 28,000, and 64 kept the queue under 2,000 and up with
// the renewals; 128 did no better. 64 stacks cost about half a MiB, only
// while reads are due, and a node that does not answer stalls the other
// nodes' keys only once all 64 wait on it (each for pushCheckTimeout).
const pushCheckWorkers = 64

// checkQueueKeep is the largest backing array the check queue keeps once
// drained: a burst (every key after a reconnect) does not stay allocated.
const checkQueueKeep = 256

// checkQueue is the FIFO of keys due a holders' read and the bookkeeping
// of the workers that drain it; guarded by the hub's mutex. A key is in it
// at most once (its pushKey's queued flag).
type checkQueue struct {
	keys     []string // the keys from head on are waiting, oldest first
	head     int
	workers  int // workers running (at most pushCheckWorkers)
	starting int // workers started that have not taken a key yet
	reading  int // holders' reads in flight
}

// pending returns how many keys wait for a worker.
func (q *checkQueue) pending() int { return len(q.keys) - q.head }

// push appends key, first moving the waiting keys to the front when the
// backing array is full and at least half of it was taken already.
func (q *checkQueue) push(key string) {
	if len(q.keys) == cap(q.keys) && q.head > 0 && 2*q.head >= len(q.keys) {
		n := copy(q.keys, q.keys[q.head:])
		clear(q.keys[n:])
		q.keys, q.head = q.keys[:n], 0
	}
	q.keys = append(q.keys, key)
}

// pop takes the oldest waiting key.
func (q *checkQueue) pop() (string, bool) {
	if q.head == len(q.keys) {
		return "", false
	}
	key := q.keys[q.head]
	q.keys[q.head] = ""
	q.head++
	if q.head == len(q.keys) {
		q.drop()
	}
	return key, true
}

// drop empties the queue, keeping a small backing array for the next keys.
func (q *checkQueue) drop() {
	if cap(q.keys) > checkQueueKeep {
		q.keys = nil
	} else {
		clear(q.keys)
		q.keys = q.keys[:0]
	}
	q.head = 0
}

// watchHeld makes a keep-alive holder learn of its key's change at once:
// the key is tracked (the first read also confirms the acquisition), and
// each invalidation is followed by an owner-compared read on the watcher,
// which tracks the key again. A read that finds the key missing or another
// owner's ends the lock (LossReadRefused). Its own renewals change the key
// too: the read then finds the lock's token and nothing happens. l.mu is
// held across the registration, so a lease that ends meanwhile cannot
// leave the lock chained (unwatchHeld runs under l.mu too): the caller
// must not hold l.mu.
func (h *pushHub) watchHeld(l *Lock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pushed || l.h.State() != sm.Held {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	l.pushed = true
	h.linkHolderLocked(l)
	h.startCheckLocked(l.wireKey)
}

// unwatchHeld forgets a holder whose lease ended; l.mu is held (it is
// called from the lease's end). A read of its key queued or in flight
// still runs: it may find the key free for a waiter.
func (h *pushHub) unwatchHeld(l *Lock) {
	if !l.pushed {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	l.pushed = false
	h.unlinkHolderLocked(l)
}

// linkHolderLocked chains l first among the holders of its key; h.mu is
// held.
func (h *pushHub) linkHolderLocked(l *Lock) {
	l.pushNext = h.held[l.wireKey]
	h.held[l.wireKey] = l
}

// unlinkHolderLocked takes l out of its key's chain (a walk of the chain,
// rarely longer than one), dropping the key from held when none is left;
// h.mu is held.
func (h *pushHub) unlinkHolderLocked(l *Lock) {
	key := l.wireKey
	if first := h.held[key]; first == l {
		if l.pushNext == nil {
			delete(h.held, key)
		} else {
			h.held[key] = l.pushNext
		}
	} else {
		for p := first; p != nil; p = p.pushNext {
			if p.pushNext == l {
				p.pushNext = l.pushNext
				break
			}
		}
	}
	l.pushNext = nil
}

// holdsLocked reports whether l is still a registered holder of key; h.mu
// is held.
func (h *pushHub) holdsLocked(key string, l *Lock) bool {
	for p := h.held[key]; p != nil; p = p.pushNext {
		if p == l {
			return true
		}
	}
	return false
}

// startCheckLocked queues key for its holders' owner-compared read, or
// asks the read in flight for another round (a queued read is not sent
// yet: it will see the change), and starts a worker when the waiting keys
// outnumber the workers about to take one; h.mu is held.
func (h *pushHub) startCheckLocked(key string) {
	if h.closed {
		return
	}
	e := h.entry(key)
	switch {
	case e.check:
		e.recheck = true
	case e.queued:
	default:
		e.queued = true
		q := &h.checks
		q.push(key)
		if q.workers < pushCheckWorkers && q.starting < q.pending() {
			q.workers++
			q.starting++
			h.m.goBackground(h.checkWorker)
		}
	}
}

// dropChecksLocked forgets the keys still queued (Locks.Close); h.mu is
// held. The reads in flight end on their own.
func (h *pushHub) dropChecksLocked() {
	q := &h.checks
	for _, key := range q.keys[q.head:] {
		if e := h.keys[key]; e != nil {
			e.queued = false
			h.forget(key, e)
		}
	}
	q.keys, q.head = nil, 0
}

// checkWorker reads the queued keys for their holders, one at a time,
// and ends when the queue is empty or Locks.Close began.
func (h *pushHub) checkWorker() {
	h.mu.Lock()
	h.checks.starting--
	for {
		key, ok := h.nextCheckLocked()
		if !ok {
			h.checks.workers--
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		h.readForHolders(key)
		h.mu.Lock()
	}
}

// nextCheckLocked takes the oldest queued key and marks its read in
// flight; h.mu is held.
func (h *pushHub) nextCheckLocked() (string, bool) {
	for !h.closed {
		key, ok := h.checks.pop()
		if !ok {
			break
		}
		if e := h.keys[key]; e != nil && e.queued {
			e.queued, e.check = false, true
			return key, true
		}
	}
	return "", false
}

// holderRead is one owner-compared read of a key for its holders.
type holderRead struct {
	key string
	e   *pushKey // the key's entry, kept while the read is in flight
	gen uint64   // e.gen when the read was sent: a later one spans an invalidation
}

// readForHolders reads key on its watcher (tracking it again) and ends
// every holder whose token it does not find, once more while
// invalidations (or new holders) came during the read; key's read is
// marked in flight.
func (h *pushHub) readForHolders(key string) {
	var buf [4]*Lock // the holders judged by one read: rarely more than one
	for {
		h.mu.Lock()
		r := holderRead{key: key, e: h.keys[key]}
		r.e.recheck = false
		r.gen = r.e.gen
		// Only holders registered before the read is sent can be judged by
		// it: one registered later took the key after the read may have
		// run (its registration asked for another round).
		judged := buf[:0]
		for p := h.held[key]; p != nil; p = p.pushNext {
			judged = append(judged, p)
		}
		q := &h.checks
		q.reading++
		h.stats.holderReadsPeak = max(h.stats.holderReadsPeak, q.reading)
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(h.ctx, pushCheckTimeout)
		_, token, found, err := h.m.core.pool.WatchRead(ctx, key)
		cancel()
		h.mu.Lock()
		q.reading--
		var refuted []*Lock
		if err == nil {
			refuted = h.refutedLocked(key, judged, token, found)
		}
		again := h.settleReadLocked(r, found, err)
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

// refutedLocked returns the judged holders that a read of key, which
// found token (or, found false, no key), proves lost and that are still
// registered (to end outside h.mu); h.mu is held.
func (h *pushHub) refutedLocked(key string, judged []*Lock, token string, found bool) (refuted []*Lock) {
	for _, l := range judged {
		if (!found || token != l.token.wire()) && h.holdsLocked(key, l) {
			refuted = append(refuted, l)
		}
	}
	return refuted
}

// settleReadLocked records read r's outcome (whether the key exists, or
// the read's error): it wakes a waiter when the key is free or unknown,
// marks the key tracked when no invalidation came during the read, and
// reports whether to read again; when not, the read is over, retried
// later if the node could not be reached. h.mu is held.
func (h *pushHub) settleReadLocked(r holderRead, found bool, err error) (again bool) {
	e := r.e
	h.stats.holderReads++
	if err != nil || !found {
		h.passBatonLocked(e) // free, or unknown: the next local waiter tries
	}
	if err == nil {
		e.armed = e.armed || e.gen == r.gen
	}
	holders := h.held[r.key] != nil
	again = e.recheck && err == nil && holders && !h.closed
	if !again {
		e.check = false
		if err != nil && holders && retriableRead(err) {
			h.retryCheckLocked(r.key) // the node is unreachable: read again once it answers
		}
		h.forget(r.key, e)
	}
	return again
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
		if h.held[key] != nil {
			h.startCheckLocked(key)
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
	l.step(sm.Input{Kind: sm.InputOwnerRefuted, Now: l.m().clock.Now()}, 0)
	return held
}

// retriableRead reports whether a holder's failed read is worth another
// try: not when the node refused tracking, the client was closed or the
// pool is closing.
func retriableRead(err error) bool {
	return !errors.Is(err, conn.ErrTrackingRefused) && !errors.Is(err, conn.ErrClientClosed) &&
		!errors.Is(err, conn.ErrPoolClosed)
}
