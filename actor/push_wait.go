package actor

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/conn"
)

// This file is push-driven waiting and loss detection (docs/architecture.md,
// "Push-driven waiting and loss detection"). Waiting acquisitions and
// keep-alive holders register their key here; conn's watcher of the key's
// node tracks it (CLIENT CACHING YES + GET on a connection with CLIENT
// TRACKING ON OPTIN NOLOOP) and hands every invalidation to onInvalidate,
// which wakes one waiter of the key (the baton: one SET NX round per
// release within this process) and queues the key for its holders'
// owner-compared read (push_hold.go: a few workers drain the queue).
// Tracking is one-shot: a key is re-armed by the read that follows each
// invalidation. Without push (WithoutPush, or a node that refused
// tracking) waiters poll and holders learn at their renewal.

// PushCheckTimeout bounds one owner-compared read of a holder.
const PushCheckTimeout = 5 * time.Second

// pushHub is the in-process fan-out of one Locks: wire key → who cares.
// Holders cost no pushKey while their key is tracked: they are chained in
// held, and an entry exists only while waiters wait or a holders' read is
// queued or in flight (push_hold.go).
type pushHub struct {
	d    *Driver
	mu   sync.Mutex
	keys map[string]*pushKey // waiters' interest, and holders' reads queued or in flight
	// entries is len(keys), written under mu: a release of a key nobody
	// of this Locks waits on reads it instead of taking mu (push_handoff.go).
	entries atomic.Int32
	held    holderTable // keep-alive holders: the first of each wire key, and their chains
	stats   pushStats
	// closed: Locks.Close began; no new background read starts, and ctx
	// (which the holders' reads run under) is cancelled.
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
	retries map[string]Timer // a holder read's pending retry per key (push_hold.go)
	checks  checkQueue       // keys waiting for their holders' read, and its workers (push_hold.go)
	// observers follow keys' changes without acquiring (push_observe.go).
	observers map[string][]*KeyWatch
}

// close stops new background reads and cancels the holders' reads in
// flight (Locks.Close, before it waits for the background work): the keys
// still queued are dropped, and no retry timer outlives the Locks.
func (h *pushHub) close() {
	h.mu.Lock()
	h.closed = true
	h.dropChecksLocked()
	retries := h.retries
	h.retries = nil
	h.mu.Unlock()
	h.cancel()
	for _, t := range retries {
		t.Stop()
	}
}

// pushKey is the interest in one wire key: its waiters, and its holders'
// read while one is queued or in flight (the holders themselves are in
// pushHub.held). It is forgotten once nobody waits and no read is due.
type pushKey struct {
	armed   bool          // a tracked read answered and no invalidation came since
	arming  bool          // a waiter's tracked read is in flight
	tracks  bool          // the last tracked read of it answered (reads work: a waiter parks long on one in flight)
	gen     uint64        // invalidations seen: a read that spans one is stale
	waiters []*pushWaiter // in arrival order; the first without the baton is woken next
	baton   *pushWaiter   // the waiter woken to try SET NX now, nil when none
	missed  bool          // an invalidation came while the baton was out
	verify  bool          // that baton came from an invalidation alone: read before trying (push_recheck.go)
	queued  bool          // in the queue of keys due a holders' read (once at most)
	check   bool          // a holders' read is in flight
	recheck bool          // an invalidation (or a new holder) came during that read
	member  bool          // a sorted set (a semaphore's holders, a lock's readers): read with ZSCORE, never GET
	shared  bool          // its waiters can all get in at once (readers waiting on a writer key): a change wakes every one
	fair    []*fairWaiter // fair waiters of this process whose grant a change of the key may be (push_fair.go)
	// releasing counts the releases of it by locks of this Locks on the
	// wire: a change meanwhile is most likely one of them (push_handoff.go).
	releasing int
	// handOvers counts the hand-overs of it in a row (push_handover.go);
	// handedBy is the lock whose release handed it over last, until that
	// release's step (released).
	handOvers int
	runStart  time.Duration // the driver clock's Now at the first of them
	handedBy  *Lock
	// yielding is the lock whose release yields the key (its run of
	// hand-overs reached its bound): no baton from its reply (push_handover.go).
	yielding *Lock
	// fairDeferred: a change woke the local fair head, and the read that
	// tracks the key again waits until a fair waiter's try ended (push_fair.go).
	fairDeferred bool
}

// waitOn is what a waiting acquisition waits for a change of: its key, and
// how the key is read and its waiters woken (see pushKey).
type waitOn struct {
	key    string
	member bool
	shared bool
}

// pushWaiter is one waiting acquisition.
type pushWaiter struct {
	wake chan struct{} // cap 1: the baton was handed over, or the key is free
	// What a release of this Locks needs to carry its try (push_handover.go):
	// its tries and ctx, whether it is parked now (under hub.mu), whether a
	// release reserved it, and the carried try, with ready (cap 1) told
	// once it is there; made (cap 1) is told once the release made the try
	// (it reads t no more), and gaveUp says the waiter left before the
	// carried try was there (under hub.mu): the release steps its answer.
	t        *tries
	ctx      context.Context
	parked   bool
	reserved bool
	gaveUp   bool
	carried  *carriedTry
	ready    chan struct{}
	made     chan struct{}
}

// pushStats counts what push did, for tests (read under hub.mu).
type pushStats struct {
	reads             int // waiters' tracked reads (arming)
	holderReads       int // holders' owner-compared reads
	holderReadsPeak   int // most holders' reads in flight at once (PushCheckWorkers·PushCheckBatch at most)
	holderBatches     int // batches of them sent (one WatchReadMany each)
	holderBatchesPeak int // most batches in flight at once (at most PushCheckWorkers)
	holderBatchMax    int // most reads in one batch (at most PushCheckBatch)
	refuted           int // held locks ended by a read
	batons            int // waiters woken to try
	handOvers         int // waiters reserved for a release's hand-over
}

// newPushHub makes m's push hub and hands its invalidations to it.
func newPushHub(d *Driver) *pushHub {
	h := &pushHub{d: d, keys: map[string]*pushKey{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	d.transport.SetInvalidationHandler(h.onInvalidate)
	return h
}

// entry returns key's entry, creating it; h.mu is held.
func (h *pushHub) entry(key string) *pushKey {
	e := h.keys[key]
	if e == nil {
		e = &pushKey{}
		h.keys[key] = e
		h.entries.Store(int32(len(h.keys)))
	}
	return e
}

// forget drops key's entry once nobody cares; h.mu is held.
func (h *pushHub) forget(key string, e *pushKey) {
	if len(e.waiters) == 0 && len(e.fair) == 0 && !e.arming && !e.queued && !e.check && e.releasing == 0 && h.keys[key] == e {
		delete(h.keys, key)
		h.entries.Store(int32(len(h.keys)))
	}
}

// onInvalidate is conn's handler, on the watcher's reader goroutine: keys
// changed on node, or (keys nil) everything tracked there was forgotten —
// then every key is treated as changed (a spurious wake costs one read or
// one SET NX; a missed one would cost a retry interval). It never blocks:
// waiters are signalled, holders' reads are queued for the workers.
func (h *pushHub) onInvalidate(_ string, keys []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if keys == nil {
		h.notifyObserversLocked("", true, nil)
		// In a fixed order (sorted), so that a simulation replays it: the
		// reads queued here are sent in this order.
		all := make([]string, 0, len(h.keys))
		for key := range h.keys {
			all = append(all, key)
		}
		h.held.each(func(key string) { // the holders' keys without an entry
			if h.keys[key] == nil {
				all = append(all, key)
			}
		})
		slices.Sort(all)
		for _, key := range all {
			h.invalidateLocked(key, h.keys[key])
		}
		return
	}
	for _, key := range keys {
		h.notifyObserversLocked(key, false, nil)
		h.invalidateLocked(key, h.keys[key])
	}
}

// invalidateLocked marks key changed (e: its entry, nil when none): the
// holders read, or else one waiter gets the baton; h.mu is held.
func (h *pushHub) invalidateLocked(key string, e *pushKey) {
	if e != nil {
		e.armed = false
		e.gen++
	}
	switch {
	case h.held.get(key) != nil && (e == nil || e.releasing == 0 || e.queued || e.check):
		// A holder here: most likely its own renewal. Its read decides;
		// waiters are woken only if it finds the key free. (While it
		// releases the key, the change is most likely its delete: unless
		// a holders' read is due already, which reads again for it, a
		// waiter tries at once, and the release's answer settles the
		// holder.)
		h.startCheckLocked(key)
	case e != nil:
		h.passChangedLocked(e)
	}
	if e != nil && len(e.fair) > 0 {
		h.fairChangedLocked(key, e)
	}
}

// passBatonLocked wakes the first waiter to try SET NX, because the key
// changed, was found free, or its state is unknown; h.mu is held. With
// the baton out already, the waiter that has it is told to try once more
// when it comes back (missed): its try may have been sent before the
// change.
func (h *pushHub) passBatonLocked(e *pushKey) {
	if e.shared { // readers: the key free for one is free for all
		for _, w := range e.waiters {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		h.stats.batons += len(e.waiters)
		return
	}
	if e.baton != nil {
		e.missed = true
		return
	}
	if len(e.waiters) == 0 {
		return
	}
	e.baton = e.waiters[0]
	e.missed, e.verify = false, false
	h.stats.batons++
	select {
	case e.baton.wake <- struct{}{}:
	default:
	}
}

// wait is a waiting acquisition's pause between two tries: it returns
// when this waiter is handed the baton (the key changed: try now), when
// the key was found free while arming, when its sleep passed (the safety
// net: parked on a tracked key; sleep while the key is not tracked yet),
// or with ctx's cause. on.member says the key is a sorted set (a
// semaphore's holders): its tracking read cannot tell a free permit, so
// arming it is followed by one more try; on.shared that every waiter of
// the key is woken by a change, not only the first. *pw registers the
// waiter on first use; leave
// must follow the last wait. On a node that refused tracking it waits
// sleep for the baton; after a read that failed otherwise (the node busy,
// loading, unreachable) at most pushCheckRetry, so that the key is tried
// and read again soon.
func (h *pushHub) wait(ctx context.Context, t *tries, on waitOn, sleep, parked time.Duration, pw **pushWaiter) error {
	key := on.key
	h.mu.Lock()
	e := h.entry(key)
	e.member, e.shared = e.member || on.member, e.shared || on.shared
	if *pw == nil {
		*pw = &pushWaiter{wake: make(chan struct{}, 1), t: t, ctx: ctx, ready: make(chan struct{}, 1), made: make(chan struct{}, 1)}
		e.waiters = append(e.waiters, *pw)
	}
	w := *pw
	if e.baton == w {
		e.baton = nil
		if e.missed { // changed again while we tried: try at once, still first
			e.missed, e.baton = false, w
			h.mu.Unlock()
			return nil
		}
	}
	select {
	case <-w.wake: // stale: the baton it carried was given back above
	default:
	}
	armed, tracks, arm := e.armed, e.tracks, !e.armed && !e.arming
	if arm {
		e.arming = true
	}
	gen := e.gen
	h.mu.Unlock()
	if arm {
		free, err := h.arm(ctx, key, gen)
		if err != nil {
			// Not tracked: a hand-off still wakes it; a read that may work
			// next time (not a refusal) is tried again soon, not after the
			// whole retry interval.
			if retriableRead(err) {
				sleep = min(sleep, pushCheckRetry)
			}
			return h.parkUntilTry(ctx, key, w, sleep, parked)
		}
		if free {
			return nil
		}
		armed = true
	}
	if !armed && !tracks { // another's read is in flight, and the last one failed or none answered yet
		return h.parkUntilTry(ctx, key, w, sleep, parked)
	}
	// Parked on a tracked key, or on another's read in flight where reads
	// work: that read tracks the key (a change then wakes one waiter), or
	// finds it free or changed (its waiter tries, or the next one is
	// woken), or fails (its waiter tries and reads again soon, or the next
	// one is woken: rearm).
	return h.parkUntilTry(ctx, key, w, parked, parked)
}

// park waits for w's wake, sleep on the clock, or ctx, through the
// driver's Spawn: the sleep's timer hands w the same token a baton does
// (either means: try now; a token left by a timer that fired as a baton
// came is drained at the next wait).
func (h *pushHub) park(ctx context.Context, w *pushWaiter, sleep time.Duration) error {
	t := h.d.clock.AfterFunc(sleep, func() {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	})
	h.mu.Lock()
	w.parked = true // a release may carry its try now (push_handover.go)
	h.mu.Unlock()
	err := h.d.spawn.Wait(ctx, w.wake)
	h.mu.Lock()
	w.parked = false
	h.mu.Unlock()
	t.Stop()
	return err
}

// arm tracks key with a read on its watcher (gen: the invalidations seen
// when it started) and reports whether the key is free to try now: missing,
// or changed while the read was in flight. A sorted set is read with
// ZSCORE of a member it never has (owner tokens are not empty), which
// tracks it but cannot tell whether a permit is free: it counts as free.
func (h *pushHub) arm(ctx context.Context, key string, gen uint64) (free bool, err error) {
	found, changed, err := h.armRead(ctx, key, gen)
	return err == nil && (changed || !found), err
}

// armRead is arm's read: found says the key (for a sorted set: nothing, it
// is false) was there, changed that an invalidation came during the read
// (then the key is not tracked as armed).
func (h *pushHub) armRead(ctx context.Context, key string, gen uint64) (found, changed bool, err error) {
	h.mu.Lock()
	member := h.entry(key).member
	h.mu.Unlock()
	if member {
		var one [1]conn.WatchReadResult
		r := h.d.transport.WatchScoreMany(ctx, []conn.MemberRead{{Key: key}}, one[:0])[0]
		err = r.Err
	} else {
		_, _, found, err = h.d.transport.WatchRead(ctx, key)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entry(key)
	e.arming = false
	h.stats.reads++
	e.tracks = err == nil
	if err != nil {
		return false, false, err
	}
	if !found {
		h.keyMissingLocked(key)
	}
	if e.gen != gen {
		return found, true, nil
	}
	e.armed = true
	return found, false, nil
}

// leave unregisters a waiter whose acquisition ended (acquired, gave up or
// out of budget). A baton it held goes on to the next waiter at once when
// the key changed meanwhile, unless it acquired a mutex key: that change
// was its own SET NX, or one before it (push_handoff.go). Otherwise, when
// waiters are left and the key
// is not tracked (the baton's change untracked it, or this waiter gave up
// its own read in flight, which may run too late to see the change), the
// key is read again for them in the background, and the next waiter is
// woken if it is found free.
func (h *pushHub) leave(key string, w *pushWaiter, acquired bool) {
	if w == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.keys[key]
	if e == nil {
		return
	}
	for i, x := range e.waiters {
		if x == w {
			e.waiters = append(e.waiters[:i], e.waiters[i+1:]...)
			break
		}
	}
	if e.baton == w {
		e.baton = nil
		if e.missed && acquired && !e.member && !e.shared {
			e.missed = false // read again below: the next is woken if it is free
		}
		if e.missed {
			h.passBatonLocked(e)
		}
	}
	if len(e.waiters) > 0 && e.baton == nil && !e.armed && !e.arming && !h.closed {
		e.arming = true
		gen := e.gen
		h.d.goBackground(func() { h.rearm(key, gen) })
	}
	h.forget(key, e)
}

// rearm tracks key again for the waiters left after the baton's holder
// left, and wakes the next one if the key is free, or if the read failed:
// the key is then tracked by nobody, and the woken waiter tries and reads
// again itself (a parked waiter would otherwise sleep its whole safety
// net). A change during a read that found the key held (most often the
// SET NX of the waiter that just left with the key) is read again, up to
// rearmRereads times, rather than woken for: its invalidation handed the
// baton on already, and the read tells whether the key is tracked now.
// Locks.Close cancels it.
func (h *pushHub) rearm(key string, gen uint64) {
	ctx, cancel := h.d.bound(h.ctx, PushCheckTimeout)
	defer cancel()
	for reads := 1; ; reads++ {
		found, changed, err := h.armRead(ctx, key, gen)
		h.mu.Lock()
		e := h.entry(key)
		again := err == nil && found && changed && reads <= rearmRereads && !h.closed &&
			len(e.waiters) > 0 && !e.armed && !e.arming
		if again {
			e.arming, gen = true, e.gen
			h.mu.Unlock()
			continue
		}
		if err != nil || !found || changed {
			h.passBatonLocked(e)
		}
		h.forget(key, e)
		h.mu.Unlock()
		return
	}
}

// rearmRereads bounds rearm's reads again after a change during its read.
const rearmRereads = 3
