package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// process is one simulated application process: its own client of the
// schedule's transport (through the proxy) and its own Locks.
type process struct {
	id          int
	locks       *lease.Locks
	closeClient func()
	closed      atomic.Bool // Locks.Close was called mid-flight: its workers stop
}

// holding is what the checker knows about one handle Acquire returned: the
// interval its owner believed it held the lock, and what it was told.
type holding struct {
	lock       *lease.Lock
	key, token string // the token as the server stores it
	label      string // process, worker and iteration, for evidence
	lease      time.Duration
	keepAlive  bool
	acquiredAt time.Time // when Acquire returned
	kind       holdKind  // a mutex (key: the lock key) or a permit or hold (key: the semaphore's or lock's name)

	mu       sync.Mutex
	promise  time.Time // the furthest now+RemainingEstimate() sampled while held
	endCall  time.Time // start of the Release/Close call after which the handle no longer claimed the lock
	kaEnd    time.Time // when the keep-alive context was seen cancelled
	kaCause  error
	toldLost bool   // a Release/ResetExpiry returned an error, or the keep-alive lost ownership
	released bool   // Release returned Released, or Close returned nil with the state Released
	outcome  string // the last Release/Close result, for evidence
	// settledAt, when set, is when a call that left nothing on the server
	// returned: a Release that answered (Released or NotOwned), a Close
	// that ended Released.
	settledAt time.Time
	crashed   bool // its holder died holding it: no renewal, no release (primitives.go)
	stopKA    func() bool
}

// sample records the library's current promise: the lease is ours on the
// server at least until now+RemainingEstimate(). now is read before the
// estimate, so the sum never exceeds the library's own deadline.
func (h *holding) sample(lock *lease.Lock) {
	now := time.Now()
	if rem := lock.RemainingEstimate(); rem > 0 {
		h.mu.Lock()
		if p := now.Add(rem); p.After(h.promise) {
			h.promise = p
		}
		h.mu.Unlock()
	}
}

// ended records that the belief ended with a call started at t, which
// returned now; settled: the call left nothing on the server.
func (h *holding) ended(t time.Time, released, settled bool, outcome string) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.endCall.IsZero() {
		h.endCall = t
	}
	if settled && h.settledAt.IsZero() {
		h.settledAt = now
	}
	h.released = h.released || released
	h.outcome = outcome
}

// leaseUntil is the latest time the holding's lease may have been on the
// server: when a call that settled it returned, or else its belief's end
// plus its lease (a renewal in flight then may have extended it so far).
//
// A crashed holder's lease was set by its acquisition, which ran before
// the call returned: it cannot be on the server past acquiredAt + lease.
func (h *holding) leaseUntil() time.Time {
	end := h.beliefEnd()
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.settledAt.IsZero():
		return h.settledAt
	case h.crashed:
		return h.acquiredAt.Add(h.lease)
	}
	return end.Add(h.lease)
}

// crash records that the holder died holding the lock: it neither renews
// nor releases, and its belief ends with its lease as it estimated it.
func (h *holding) crash() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.crashed = true
}

// closeAtEnd closes the handle, as a careful owner's deferred Close would:
// a no-op for a handle that was released, the release of one still held.
func (h *holding) closeAtEnd(stats *Stats) {
	t := time.Now()
	err := h.lock.Close()
	state := h.lock.State()
	h.mu.Lock()
	open := h.endCall.IsZero()
	h.mu.Unlock()
	if !open {
		return
	}
	stats.Releases++
	if errors.Is(err, conn.ErrOutcomeUnknown) {
		stats.Uncertain++
	}
	released := err == nil && state == lease.StateReleased
	h.ended(t, released, released, fmt.Sprintf("Close at the end: %v (state %v)", err, state))
}

// keepAliveLost reports whether the keep-alive ended with ErrOwnershipLost
// (the owner was told so); call it once the callbacks have run.
func (h *holding) keepAliveLost() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	lost := errors.Is(h.kaCause, lease.ErrOwnershipLost)
	h.toldLost = h.toldLost || lost
	return lost
}

// told records an error the owner was given.
func (h *holding) told(outcome string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.toldLost, h.outcome = true, outcome
}

// beliefEnd is when the owner stopped believing it held the lock: the
// furthest promise the library made, cut by the call that gave the lock up
// and, with a keep-alive, by the keep-alive context's cancellation. The
// promise also bounds a keep-alive lock: the context.AfterFunc that records
// the cancellation runs a scheduling delay after it, and the library's own
// timer cancels at the promised deadline, so without this bound that delay
// would count as an overlap that never happened.
func (h *holding) beliefEnd() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	end := h.promise
	if !h.endCall.IsZero() && h.endCall.Before(end) {
		end = h.endCall
	}
	if h.keepAlive && !h.kaEnd.IsZero() && h.kaEnd.Before(end) {
		end = h.kaEnd
	}
	return end
}

// endCallTime returns when the call that gave the lock up started (zero if
// none did).
func (h *holding) endCallTime() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.endCall
}

// worker runs one worker goroutine's loop on one process.
type worker struct {
	s        *schedule
	id       int
	proc     *process
	rng      *rand.Rand
	guardRng *rand.Rand // the guarded writes' decisions (guarded.go); nil for a primitives worker
	fairRng  *rand.Rand // a mutex worker's draws of fair waiting (fair.go); nil when the schedule has none
	deadline time.Time
	stats    Stats
	holdings []*holding
	failures []acquireFailure
	// writerWaits are the write acquisitions of the schedule's writer, and
	// permitWaits the waiting permit acquisitions (primitive workers,
	// primitives.go).
	writerWaits, permitWaits []primWait
}

func (w *worker) run() {
	for iter := 0; !w.proc.closed.Load() && time.Now().Before(w.deadline); iter++ {
		d := decide(w.rng, len(w.s.plan.keys))
		lock, h := w.acquire(d, iter)
		if lock == nil {
			sleepFor(d.backoff)
			continue
		}
		w.hold(lock, h, d)
		w.release(lock, h, d)
	}
}

// acquire runs one Acquire as d says and records the handle it returns.
func (w *worker) acquire(d decision, iter int) (*lease.Lock, *holding) {
	var opts []lease.AcquireOption
	if d.keepAlive {
		opts = append(opts, lease.WithKeepAlive())
	}
	if d.wait > 0 {
		opts = append(opts, lease.WithWait(d.wait), lease.WithRetryEvery(10*time.Millisecond))
	}
	opts = w.fairOptions(opts)
	key := w.s.plan.keys[d.key]
	label := fmt.Sprintf("p%d/w%d#%d", w.proc.id, w.id, iter)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d.acquireTimeout)
	lock, err := w.proc.locks.Acquire(ctx, key, d.lease, opts...)
	acquiredAt := time.Now()
	cancel()
	w.stats.AcquireCalls++
	if err != nil {
		w.noteErr(err)
		if errors.Is(err, lease.ErrNotAcquired) {
			w.stats.NotAcquired++
			return nil, nil
		}
		f := acquireFailure{label: label, key: key, start: start, end: acquiredAt, err: err.Error(),
			abandoned: !errors.Is(err, conn.ErrNotSubmitted)}
		if f.abandoned {
			w.stats.Abandoned++
		}
		w.failures = append(w.failures, f)
		return nil, nil
	}
	w.stats.Acquisitions++
	h := &holding{lock: lock, key: key, token: string(lock.Token().Bytes()), lease: d.lease, keepAlive: d.keepAlive,
		acquiredAt: acquiredAt, label: label}
	h.sample(lock)
	w.holdings = append(w.holdings, h)
	if d.keepAlive {
		w.watchKeepAlive(lock, h)
	}
	return lock, h
}

// watchKeepAlive records when the keep-alive lock's context ends, and why.
func (w *worker) watchKeepAlive(lock *lease.Lock, h *holding) {
	ka := lock.Context()
	w.s.kaCallbacks.Add(1)
	h.stopKA = context.AfterFunc(ka, func() {
		defer w.s.kaCallbacks.Done()
		now := time.Now()
		h.mu.Lock()
		h.kaEnd, h.kaCause = now, context.Cause(ka)
		h.mu.Unlock()
	})
}

// hold keeps the lock for d.hold (cut at the workload deadline), sampling
// the library's promise every few milliseconds, with one ResetExpiry if d
// says so. It stops early when a keep-alive ends or the process is closed.
func (w *worker) hold(lock *lease.Lock, h *holding, d decision) {
	start := time.Now()
	until := start.Add(d.hold)
	if until.After(w.deadline) {
		until = w.deadline
	}
	resetDue := d.reset
	ka := lock.Context()
	for now := start; now.Before(until) && ka.Err() == nil && !w.proc.closed.Load(); now = time.Now() {
		if resetDue && now.Sub(start) >= d.resetAfter {
			resetDue = false
			w.reset(lock, h, d)
			continue
		}
		step := min(until.Sub(now), 20*time.Millisecond)
		if resetDue {
			step = min(step, max(0, start.Add(d.resetAfter).Sub(now)))
		}
		timer := time.NewTimer(step)
		select {
		case <-timer.C:
		case <-ka.Done():
			timer.Stop()
		}
		h.sample(lock)
		w.maybeGuard(lock, h)
	}
}

// reset runs one ResetExpiry to the lock's own lease duration: never a
// shortening one, so a promise sampled before it stays true on the server
// whatever the reset's outcome.
func (w *worker) reset(lock *lease.Lock, h *holding, d decision) {
	ctx, cancel := context.WithTimeout(context.Background(), d.resetTimeout)
	_, err := lock.ResetExpiry(ctx, d.lease)
	cancel()
	w.stats.Resets++
	if err != nil {
		w.noteErr(err)
		h.told("ResetExpiry: " + err.Error())
	}
	h.sample(lock)
}

// release gives the lock up with Release (retried, with a normal timeout,
// while the library says the handle still holds it) or Close.
func (w *worker) release(lock *lease.Lock, h *holding, d decision) {
	if d.close {
		t := time.Now()
		err := lock.Close()
		state := lock.State()
		w.stats.Releases++
		if err != nil {
			w.noteErr(err)
		}
		released := err == nil && state == lease.StateReleased
		h.ended(t, released, released, fmt.Sprintf("Close: %v (state %v)", err, state))
		return
	}
	timeout := d.releaseTimeout
	for range 3 {
		t := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		out, err := lock.Release(ctx)
		cancel()
		w.stats.Releases++
		if err == nil {
			h.ended(t, out == lease.Released, true, fmt.Sprintf("Release: %v", out))
			return
		}
		w.noteErr(err)
		h.told("Release: " + err.Error())
		if state := lock.State(); state != lease.StateHeld {
			h.ended(t, false, false, fmt.Sprintf("Release: %v (state %v)", err, state))
			return
		}
		h.sample(lock) // still ours, says the library: the belief goes on
		if w.proc.closed.Load() {
			return
		}
		timeout = normalTimeout
	}
}

// noteErr counts an error returned to a worker.
func (w *worker) noteErr(err error) {
	if errors.Is(err, conn.ErrOutcomeUnknown) {
		w.stats.Uncertain++
	}
}

// sleepFor sleeps d of real time.
func sleepFor(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

// outsiderWrite is one outsider SET NX PX that took its key.
type outsiderWrite struct {
	key, token    string
	sent, replied time.Time
	px            time.Duration
}

// outsider takes free keys with plain SET NX PX, connected directly to the
// server (not through the proxy), as another program would.
type outsider struct {
	client rueidis.Client
	keys   []string
	rng    *rand.Rand
	writes []outsiderWrite
	stats  Stats
}

func (o *outsider) run(deadline time.Time) {
	for n := 0; time.Now().Before(deadline); n++ {
		key := o.keys[o.rng.IntN(len(o.keys))]
		px := between(o.rng, 150*time.Millisecond, 300*time.Millisecond)
		gap := between(o.rng, 15*time.Millisecond, 25*time.Millisecond)
		token := fmt.Sprintf("outsider-%d", n)
		ctx, cancel := context.WithTimeout(context.Background(), normalTimeout)
		sent := time.Now()
		err := o.client.Do(ctx, o.client.B().Set().Key(key).Value(token).Nx().PxMilliseconds(px.Milliseconds()).Build()).Error()
		replied := time.Now()
		cancel()
		if err == nil {
			o.writes = append(o.writes, outsiderWrite{key: key, token: token, sent: sent, replied: replied, px: px})
			o.stats.OutsiderWrites++
		}
		// A write whose outcome is unknown has no interval: it can only hide
		// an overlap, never make one up. Its token is allowed at the end.
		sleepFor(min(gap, time.Until(deadline)))
	}
}
