package actor

import (
	"errors"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file is the holders' side of the push hub: keep-alive holders are
// chained per wire key in pushHub.held (no pushKey while their key is
// tracked), and each invalidation of a held key queues it, once, for an
// owner-compared read that one of at most PushCheckWorkers workers sends,
// in a batch of up to PushCheckBatch keys (conn.Pool.WatchReadMany).

// PushCheckWorkers bounds the batches of holders' reads in flight, and so
// the goroutines that send them (a worker exits once the queue is empty).
// Every renewal of our own invalidates the key (tracking is one-shot), so
// 100,000 held locks renewing every 5 s need 20,000 reads a second, plus
// one per acquisition. A read is bound by its round trip, not by the
// server, so a worker sends up to PushCheckBatch keys in one WatchReadMany
// (one round trip per node), where it used to send one: 64 such workers
// were needed to keep up. In BenchmarkHeldKeepAlive (100,000 locks, lease
// 10 s, 2 shared cores; the most keys with an entry, sampled every 20 ms)
// 64 one-read workers peaked at 1,341 keys and 64 goroutines, for 200,000
// round trips; batches of 256 with 1, 4 or 8 workers peaked at 430, 655
// and 1,175 keys (noise: all keep up) and did the 200,000 reads in about
// 8,600 round trips (23 keys each: a worker takes what is queued when it
// is free, so batches grow only with the load). The number of workers is
// thus not for throughput: several, not one, so that a new invalidation is
// read at once while a batch is in flight. A node that does not answer
// holds each batch with a key on it, for up to PushCheckTimeout: a batch's
// nodes are read concurrently, so its keys on the other nodes are tracked
// again at once, but they are judged only when the batch returns (with
// one-read workers, all 64 soon waited on such a node, one key each).
const PushCheckWorkers = 4

// PushCheckBatch bounds the keys one worker reads in one WatchReadMany:
// 256 keys are 512 commands, about 19 KB written and 11 KB read, far inside
// rueidis' 0.5 MiB socket buffers. On the real Redis 7.0 of
// scripts/with-servers.sh (loopback, 2 shared cores) one WatchReadMany took
// at the median 92 µs for one key, 126 µs for 16, 246 µs for 64, 371 µs for
// 256 (1.45 µs a key) and 1.25 ms for 1,024 (1.22 µs a key): past 256 a
// batch costs about the same per key but holds each key's result longer.
// A worker's buffers for a full batch are about 32 KB, kept only while it
// runs.
const PushCheckBatch = 256

// checkQueueKeep is the largest backing array the check queue keeps once
// drained: a burst (every key after a reconnect) does not stay allocated.
const checkQueueKeep = 256

// checkQueue is the FIFO of keys due a holders' read and the bookkeeping
// of the workers that drain it; guarded by the hub's mutex. A key is in it
// at most once (its pushKey's queued flag).
type checkQueue struct {
	keys     []string // the keys from head on are waiting, oldest first
	head     int
	workers  int // workers running (at most PushCheckWorkers)
	starting int // workers started that have not taken a batch yet
	reading  int // holders' reads in flight
	batches  int // batches of them in flight (one per busy worker)
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
	if l.flags.has(flagPushed) || l.h.State() != sm.Held {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	l.flags.set(flagPushed, true)
	h.linkHolderLocked(l)
	h.startCheckLocked(l.wireKey)
}

// unwatchHeld forgets a holder whose lease ended; l.mu is held (it is
// called from the lease's end). A read of its key queued or in flight
// still runs: it may find the key free for a waiter.
func (h *pushHub) unwatchHeld(l *Lock) {
	if !l.flags.has(flagPushed) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	l.flags.set(flagPushed, false)
	h.unlinkHolderLocked(l)
}

// linkHolderLocked chains l first among the holders of its key; h.mu is
// held.
func (h *pushHub) linkHolderLocked(l *Lock) {
	h.held.setNext(l, h.held.get(l.wireKey))
	h.held.set(l)
}

// unlinkHolderLocked takes l out of its key's chain (a walk of the chain,
// rarely longer than one), dropping the key from held, and its pending
// read retry, when none is left; h.mu is held.
func (h *pushHub) unlinkHolderLocked(l *Lock) {
	key := l.wireKey
	next := h.held.nextOf(l)
	if first := h.held.get(key); first == l {
		if next == nil {
			h.held.remove(key)
			h.stopRetryLocked(key) // the retry reads for holders: none is left
		} else {
			h.held.set(next)
		}
	} else {
		for p := first; p != nil; p = h.held.nextOf(p) {
			if h.held.nextOf(p) == l {
				h.held.setNext(p, next)
				break
			}
		}
	}
	h.held.setNext(l, nil)
}

// holdsLocked reports whether l is still a registered holder of key; h.mu
// is held.
func (h *pushHub) holdsLocked(key string, l *Lock) bool {
	for p := h.held.get(key); p != nil; p = h.held.nextOf(p) {
		if p == l {
			return true
		}
	}
	return false
}

// startCheckLocked queues key for its holders' owner-compared read, or
// asks the read in flight for another round (a queued read is not sent
// yet: it will see the change), and starts a worker when the waiting keys
// are more than the workers about to take a batch will take; h.mu is held.
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
		if q.workers < PushCheckWorkers && q.starting*PushCheckBatch < q.pending() {
			q.workers++
			q.starting++
			h.d.goBackground(h.checkWorker)
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

// checkWorker reads the queued keys for their holders, a batch at a time,
// and ends when the queue is empty (and its last batch needs no other
// round) or Locks.Close began.
func (h *pushHub) checkWorker() {
	var b checkBatch
	h.mu.Lock()
	h.checks.starting--
	for h.takeChecksLocked(&b) {
		h.mu.Unlock()
		h.readForHolders(&b)
		h.mu.Lock()
	}
	h.checks.workers--
	h.mu.Unlock()
}

// takeChecksLocked makes b the next round of a worker: the reads of the
// last round that asked for another one, then the oldest queued keys up to
// PushCheckBatch (marked in flight). For each read it notes the key's
// invalidations and the holders registered now, which alone it may judge
// (one registered later took the key after the read may have run; its
// registration asked for another round). It reports whether there is
// anything to read; h.mu is held.
func (h *pushHub) takeChecksLocked(b *checkBatch) bool {
	q := &h.checks
	for len(b.reads) < PushCheckBatch && !h.closed {
		key, ok := q.pop()
		if !ok {
			break
		}
		if e := h.keys[key]; e != nil && e.queued {
			e.queued, e.check = false, true
			b.reads = append(b.reads, holderRead{key: key, e: e})
		}
	}
	if len(b.reads) == 0 {
		return false
	}
	b.keys, b.judged, b.members, b.fairJudged = b.keys[:0], b.judged[:0], b.members[:0], b.fairJudged[:0]
	for i := range b.reads {
		r := &b.reads[i]
		r.e.recheck = false
		r.gen = r.e.gen
		r.from = len(b.judged)
		for p := h.held.get(r.key); p != nil; p = h.held.nextOf(p) {
			b.judged = append(b.judged, p)
		}
		r.to = len(b.judged)
		b.addRead(r)
	}
	q.reading += len(b.reads)
	q.batches++
	h.stats.holderReadsPeak = max(h.stats.holderReadsPeak, q.reading)
	h.stats.holderBatchesPeak = max(h.stats.holderBatchesPeak, q.batches)
	h.stats.holderBatchMax = max(h.stats.holderBatchMax, len(b.reads))
	h.stats.holderBatches++
	return true
}

// readForHolders sends b's reads (tracking the keys again) and ends every
// judged holder whose token a read did not find; the reads that asked for
// another round (an invalidation, or a new holder, came meanwhile) stay in
// b for the next one.
func (h *pushHub) readForHolders(b *checkBatch) {
	ctx, cancel := h.d.bound(h.ctx, PushCheckTimeout)
	b.send(ctx, h.d.transport)
	cancel()
	h.mu.Lock()
	q := &h.checks
	q.reading -= len(b.reads)
	q.batches--
	var refuted []*Lock
	again := b.reads[:0]
	for _, r := range b.reads {
		var found bool
		var err error
		refuted, found, err = h.judgeLocked(refuted, b, r)
		h.fairReadLocked(b, r)
		if h.settleReadLocked(r, found, err) {
			again = append(again, r)
		}
	}
	clear(b.reads[len(again):])
	b.reads = again
	clear(b.judged) // no ended holder stays reachable from the buffers between rounds
	clear(b.fairJudged)
	clear(b.results)
	clear(b.mresults)
	clear(b.members)
	h.mu.Unlock()
	ended := 0
	for _, l := range refuted {
		if l.pushRefuted() {
			ended++
		}
	}
	if ended > 0 {
		h.mu.Lock()
		h.stats.refuted += ended
		h.mu.Unlock()
	}
}

// refutedLocked appends to refuted the judged holders that a read of key,
// which found token (or, found false, no key), proves lost and that are
// still registered (to end outside h.mu); h.mu is held.
func (h *pushHub) refutedLocked(refuted []*Lock, key string, judged []*Lock, token string, found bool) []*Lock {
	for _, l := range judged {
		if (!found || token != l.token) && h.holdsLocked(key, l) {
			refuted = append(refuted, l)
		}
	}
	return refuted
}

// settleReadLocked records read r's outcome (whether the key exists, or
// the read's error): it marks the key tracked when no invalidation came
// during the read, and reports whether to read again. When not, the read
// is over (retried later if the node could not be reached), and a waiter
// is woken when the key is free or unknown, or when a change came during
// the read (recheck) with nobody left to read again for: what it found
// may be stale (its holder may have left since), so the change it missed
// must reach a waiter. h.mu is held.
func (h *pushHub) settleReadLocked(r holderRead, found bool, err error) (again bool) {
	e := r.e
	h.stats.holderReads++
	if err == nil {
		e.armed = e.armed || e.gen == r.gen
		if !found {
			h.keyMissingLocked(r.key)
		}
	}
	holders := h.held.get(r.key) != nil
	again = e.recheck && err == nil && (holders || len(e.fair) > 0) && !h.closed
	if err != nil || !found || e.recheck && !again {
		h.passBatonLocked(e) // free, unknown, or changed since: the next local waiter tries
	}
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
// node or its watcher unreachable) is tried again, and the longest a
// waiter whose read failed sleeps before it tries again (rule
// RestartWithoutPersistence): short, so that a server restarted empty is
// read within about this much of answering again — a dial to a node that
// is down fails at once, and one read carries every key of a node.
const pushCheckRetry = 20 * time.Millisecond

// pushReadBound bounds the read a woken waiter makes before it tries (see
// heldAfterChange): a watcher that does not answer delays the try by that
// much at most.
const pushReadBound = 250 * time.Millisecond

// retryCheckLocked reads key again for its holders after pushCheckRetry,
// unless they are gone or Locks.Close began by then; h.mu is held.
func (h *pushHub) retryCheckLocked(key string) {
	if h.closed || h.retries[key] != nil {
		return
	}
	if h.retries == nil {
		h.retries = map[string]Timer{}
	}
	h.retries[key] = h.d.clock.AfterFunc(pushCheckRetry, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.retries, key)
		if h.held.get(key) != nil {
			h.startCheckLocked(key)
		}
	})
}

// stopRetryLocked disarms key's pending holders' read retry, if any;
// h.mu is held.
func (h *pushHub) stopRetryLocked(key string) {
	if t := h.retries[key]; t != nil {
		t.Stop()
		delete(h.retries, key)
	}
}

// pushRefuted ends the lock after a read proved the key is not ours (only
// a Held handle moves: see statemachine's stepOwnerRefuted) and reports
// whether it did.
func (l *Lock) pushRefuted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := l.h.State() == sm.Held
	l.step(sm.Input{Kind: sm.InputOwnerRefuted, Now: l.d.clock.Now()}, 0)
	return held
}

// retriableRead reports whether a failed read (a holder's or a waiter's)
// is worth another try soon: not when the node refused tracking, the
// client was closed or the pool is closing.
func retriableRead(err error) bool {
	return !errors.Is(err, conn.ErrTrackingRefused) && !errors.Is(err, conn.ErrClientClosed) &&
		!errors.Is(err, conn.ErrPoolClosed)
}
