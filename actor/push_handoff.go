package actor

// This file is what keeps a hand-off within one Locks at about one SET NX
// (rule PushWakesOneWaiterPerRelease), on top of the baton of push_wait.go:
//
//   - A release by a lock of this Locks hands the baton at once, from the
//     release's reply, without the read a baton from an invalidation makes
//     first (push_recheck.go): the key was just deleted, so the woken
//     waiter tries SET NX at once (one round trip after the release, where
//     the invalidation's baton takes a read and a SET NX). The
//     invalidation itself, when it comes while that release is on the
//     wire (its push often beats the reply: in 55–75 % of the hand-offs
//     of 16 waiters in peerbench), hands the baton without the read too
//     (releaseSent), and without a keep-alive holder's read: the waiter's
//     SET NX then goes out before the release's reply is read.
//   - A waiter that leaves with the key does not pass the baton on for an
//     invalidation that came while it tried (leave): its own SET NX made
//     it, or a change before its SET NX, which found the key free. The key
//     is read again for the others instead, which wakes the next one only
//     if the key is free.
//   - A waiting acquisition that starts while others of this Locks wait on
//     the tracked key joins them without a first SET NX (tries.run): the
//     key was held at their last read and no change came since.
//
// Mutex keys only: a semaphore's holders (a sorted set) change with every
// permit taken or returned, and a reader waits on the writer key, whose
// change wakes every reader (push_wait.go). A released permit hands the
// baton to one waiter of its semaphore, as a change does; the waiter that
// takes the permit reads the set again as it leaves, which counts as free
// (ZSCORE cannot tell), so the next waiter tries in turn: one after the
// other, until one is refused, however many permits a change freed.

// released is told by a lock of this Locks that its release deleted its
// key (the reply, before the caller has it); l.mu is held (the lock order
// is l.mu, then h.mu). With the baton out already, a read it was to make
// first is skipped, or else it tries once more when it comes back.
func (h *pushHub) released(l *Lock) {
	if l.Kind() != KindMutex && l.Kind() != KindPermit || h.entries.Load() == 0 {
		return // no entry: as if mu had been taken at this load (entries changes under mu with keys)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.keys[l.wireKey]
	if l.Fair() {
		// The release script granted the lock to the queue's head: a local
		// head claims it now, not when the invalidation comes.
		if e != nil {
			for _, w := range e.fair {
				if w.position() == 1 {
					w.signal()
				}
			}
		}
		return
	}
	if e != nil && e.handedBy == l {
		e.handedBy = nil // handed over to a waiter, which has the baton (push_handover.go)
		return
	}
	if e != nil {
		e.handOvers = 0 // freed for every process: the next releases may hand it over again
	}
	if e != nil && e.yielding == l {
		// It yields (push_handover.go): the waiters here learn of the
		// change from its invalidation, as those of other processes do.
		e.yielding = nil
		return
	}
	if e == nil || e.shared || len(e.waiters) == 0 {
		return
	}
	if e.baton != nil && e.verify {
		e.verify = false // the key is free: no read before the try
		return
	}
	h.passBatonLocked(e)
}

// releaseSent tells the hub that l's release is about to be sent, and
// reports whether it was noted (then releaseAnswered must follow, once its
// reply or error came). While a release of this Locks is on the wire, an
// invalidation of its key hands the baton without the read first
// (passChangedLocked): the change is most likely that release's delete,
// and its push often beats the release's reply, which then finds the
// waiter in the middle of a read it no longer needs. An unfair mutex
// with local waiters only: nothing else waits for the reply's baton.
func (h *pushHub) releaseSent(l *Lock) bool {
	if l.Kind() != KindMutex || l.Fair() || h.entries.Load() == 0 {
		return false // no entry, no waiter (see released)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.keys[l.wireKey]
	if e == nil || e.shared || len(e.waiters) == 0 {
		return false
	}
	e.releasing++
	return true
}

// releaseAnswered ends what releaseSent noted for l.
func (h *pushHub) releaseAnswered(l *Lock) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.keys[l.wireKey]; e != nil && e.releasing > 0 {
		e.releasing--
		h.forget(l.wireKey, e)
	}
}

// joinable reports whether a mutex waiter of key may park without a first
// try: others of this Locks wait on it, and its read answered "held" with
// no change since, or their read is in flight (a change during it, or a key
// found free, wakes one of them), or one of them has the baton (it tries or
// reads now: it leaves with the key, or tracks the key again, or hands the
// baton on; a change meanwhile makes it try again).
func (h *pushHub) joinable(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.keys[key]
	return e != nil && !e.member && !e.shared && len(e.waiters) > 0 && (e.armed || e.arming || e.baton != nil)
}

// joinsParked reports whether t's acquisition parks before its first try
// (see joinable): a waiting, unfair mutex acquisition with push.
func (t *tries) joinsParked() bool {
	return t.d.push != nil && t.waits() && t.spec.Fair == nil && t.spec.Kind == KindMutex &&
		t.d.push.joinable(t.spec.WireKey)
}
