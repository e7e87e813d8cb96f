package actor

import (
	"slices"
	"strings"

	"github.com/respire-go/respire/conn"
)

// This file is the push hub's side of fair waiting: a change of a key with
// fair waiters wakes only the waiters it may have granted — never the
// herd. A grant is a reservation in the lock ("fair:" + token as the
// key's value or as a member), so the hub reads the key after each change
// (the read that tracks it again anyway, in the holders' batches:
// push_batch.go) and wakes the local waiter whose reservation it finds.
// The local waiter known to be at the head is woken at once, without
// waiting for that read: in one process that is the next holder, and its
// try claims the grant in one round trip; the read then waits for that try
// to end (fairTried), so as not to slow the claim down. A key found gone (a non-fair
// release, an expiry) wakes the local waiter nearest the head, whose try
// grants the lock to the head; a read that failed does the same. Positions
// are the waiters' last known ones (each try and each waiter-lease renewal
// reports one); a local waiter that acquires or leaves moves the local
// waiters behind it up by one.

// fairReadMax bounds the reservation reads (ZSCORE key "fair:"+token) one
// holders' read of a sorted set makes for its local fair waiters: the
// ones nearest the head.
const fairReadMax = 8

// addFair registers w with every key it waits on, and has each key read
// (tracked) unless it is tracked already or a read is on its way.
func (h *pushHub) addFair(w *fairWaiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, on := range w.watch {
		e := h.entry(on.key)
		e.member = e.member || on.member
		e.fair = append(e.fair, w)
		if !e.armed && !e.queued && !e.check {
			h.startCheckLocked(on.key)
		}
	}
}

// removeFair unregisters w (its wait ended) and moves the local waiters
// of its queue behind it up by one when it was queued.
func (h *pushHub) removeFair(w *fairWaiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.queuedToken() != "" {
		h.fairMovedUpLocked(w, w.position())
	}
	h.fairTriedLocked(w)
	for _, on := range w.watch {
		e := h.keys[on.key]
		if e == nil {
			continue
		}
		e.fair = slices.DeleteFunc(e.fair, func(x *fairWaiter) bool { return x == w })
		h.forget(on.key, e)
	}
}

// fairGone tells the hub that w left its queue (it acquired): the local
// waiters behind it move up by one.
func (h *pushHub) fairGone(w *fairWaiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fairMovedUpLocked(w, w.position())
}

// fairMovedUpLocked moves the local waiters of w's queue behind position
// pos up by one; h.mu is held.
func (h *pushHub) fairMovedUpLocked(w *fairWaiter, pos int) {
	if pos <= 0 || len(w.watch) == 0 {
		return
	}
	e := h.keys[w.watch[0].key]
	if e == nil {
		return
	}
	for _, x := range e.fair {
		if x == w || x.queue != w.queue {
			continue
		}
		x.mu.Lock()
		if x.pos > pos {
			x.pos--
		}
		x.mu.Unlock()
	}
}

// fairChangedLocked is an invalidation of key, which has fair waiters:
// the local head is woken at once, and the key is read for the rest (and
// to track it again) — once the head's try ended, when there is a local
// head: that read would run beside the head's claim of its grant, which
// it slows down (the claim is the hand-off), and the claim most often
// makes the read stale at once. A read that finds a grant for another
// local waiter (a stale position) wakes it then, one round trip later;
// h.mu is held.
func (h *pushHub) fairChangedLocked(key string, e *pushKey) {
	woke := false
	for _, w := range e.fair {
		if w.position() == 1 {
			w.signal()
			woke = true
		}
	}
	if woke && !e.queued && !e.check {
		e.fairDeferred = true
		return
	}
	h.startCheckLocked(key)
}

// fairTried tells the hub that a try of w ended (or w left): the read a
// change deferred for the head's try is started now.
func (h *pushHub) fairTried(w *fairWaiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fairTriedLocked(w)
}

// fairTriedLocked is fairTried with h.mu held.
func (h *pushHub) fairTriedLocked(w *fairWaiter) {
	for _, on := range w.watch {
		if e := h.keys[on.key]; e != nil && e.fairDeferred {
			e.fairDeferred = false
			h.startCheckLocked(on.key)
		}
	}
}

// nearestLocked returns the local fair waiter of e nearest the head (an
// unknown position first: it has not been answered yet), nil when none;
// h.mu is held.
func nearestLocked(e *pushKey) *fairWaiter {
	var best *fairWaiter
	bestPos := 0
	for _, w := range e.fair {
		if p := w.position(); best == nil || p < bestPos {
			best, bestPos = w, p
		}
	}
	return best
}

// fairMemberReads appends to b the reservation reads of r's key for its
// local fair waiters nearest the head (a sorted set: a semaphore's
// holders, a lock's readers), noting which waiter each read is for.
func (b *checkBatch) fairMemberReads(r *holderRead) {
	r.fairFrom = len(b.fairJudged)
	ws := slices.Clone(r.e.fair)
	slices.SortStableFunc(ws, func(a, c *fairWaiter) int { return a.position() - c.position() })
	for _, w := range ws {
		if len(b.fairJudged)-r.fairFrom == fairReadMax {
			break
		}
		if !w.readsMember(r.key) {
			continue
		}
		if tok := w.queuedToken(); tok != "" {
			b.fairJudged = append(b.fairJudged, w)
			b.members = append(b.members, conn.MemberRead{Key: r.key, Member: conn.FairReservation(tok)})
		}
	}
	r.fairTo = len(b.fairJudged)
}

// readsMember reports whether w's grant can be a member of the sorted set
// key: a permit's in the holders, a reader's in the readers.
func (w *fairWaiter) readsMember(key string) bool {
	switch w.kind {
	case KindPermit:
		return true
	case KindRead:
		return key == conn.RWLockOfKey(key).ReadersKey
	}
	return false
}

// fairReadLocked wakes, after read r of a key with fair waiters, the
// waiters its answer granted (their reservation found), or, when it found
// the key gone or failed, the local waiter nearest the head; when a
// readers set changed with no grant found, a local writer at the head
// (the readers it waits for may have left); h.mu is held.
func (h *pushHub) fairReadLocked(b *checkBatch, r holderRead) {
	e := r.e
	if len(e.fair) == 0 {
		return
	}
	if !r.member {
		res := &b.results[r.result]
		switch {
		case res.Err != nil || !res.Found:
			if w := nearestLocked(e); w != nil {
				w.signal()
			}
		case strings.HasPrefix(res.Token, conn.FairReservationPrefix):
			tok := res.Token[len(conn.FairReservationPrefix):]
			for _, w := range e.fair {
				if w.queuedToken() == tok {
					w.signal()
				}
			}
		}
		return
	}
	granted, failed := false, false
	for i, w := range b.fairJudged[r.fairFrom:r.fairTo] {
		res := &b.mresults[r.fairResult+i]
		switch {
		case res.Err != nil:
			failed = true
		case res.Found:
			granted = true
			w.signal()
		}
	}
	if granted {
		return
	}
	if w := nearestLocked(e); w != nil && (failed || w.kind == KindWrite && w.position() == 1) {
		w.signal()
	}
}
