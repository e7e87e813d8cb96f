package actor

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

// stepWatch is an Observer that fails the test when two steps of one lock
// overlap, and records each lock's inputs in the order they were stepped.
type stepWatch struct {
	t      *testing.T
	mu     sync.Mutex
	inStep map[*Lock]*atomic.Bool
	order  map[*Lock][]sm.InputKind
}

func (w *stepWatch) Stepped(l *Lock, in sm.Input, _ []sm.Effect) {
	w.mu.Lock()
	busy := w.inStep[l]
	if busy == nil {
		busy = new(atomic.Bool)
		w.inStep[l] = busy
	}
	w.order[l] = append(w.order[l], in.Kind)
	w.mu.Unlock()
	if !busy.CompareAndSwap(false, true) {
		w.t.Errorf("two steps of one lock at once (input %d)", in.Kind)
		return
	}
	runtime.Gosched() // widen the window a second step would need
	busy.Store(false)
}

func (w *stepWatch) Fence(ctx context.Context, _ *Lock) (context.Context, func(error)) {
	return ctx, func(error) {}
}

func (w *stepWatch) RenewalSent(*Lock, time.Duration, time.Duration) {}

// sawRenewals reports whether l's renewal ticks and at least two command
// completions were stepped.
func (w *stepWatch) sawRenewals(l *Lock) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	timers, done := 0, 0
	for _, k := range w.order[l] {
		switch k {
		case sm.InputTimer:
			timers++
		case sm.InputCommandDone:
			done++
		}
	}
	return timers > 0 && done >= 2
}

// TestOneInputAtATime_TheShippedDriverStepsALockOneInputAtATime: the
// driver production runs (over rueidis, on a sim node) gets, on one lock, a
// keep-alive whose renewals and deadline ticks come from the timer heap,
// 16 goroutines sending requests for 400ms (on, bounded, until renewals were stepped), a context watch and a release: every input
// is stepped alone, none overlapping another (the observer is told inside
// each step, under the lock's mutex).
func TestOneInputAtATime_TheShippedDriverStepsALockOneInputAtATime(t *testing.T) {
	w := &stepWatch{t: t, inStep: map[*Lock]*atomic.Bool{}, order: map[*Lock][]sm.InputKind{}}
	_, d := testDriver(t, sim.Redis84, func(c *Config) { c.Observer = w })
	ctx := context.Background()
	lock, err := d.Acquire(ctx, AcquireSpec{WireKey: "k", TTL: 30 * time.Millisecond, KeepAlive: true})
	if err != nil || lock == nil {
		t.Fatalf("Acquire = %v, %v", lock, err)
	}
	var wg sync.WaitGroup
	var resets atomic.Int64
	// At least 400ms (some ten renewals and deadlines of the keep-alive),
	// and on until renewal ticks and completions were stepped (a loaded
	// machine may run late), within a generous bound.
	end, bound := time.Now().Add(400*time.Millisecond), time.Now().Add(20*time.Second)
	going := func() bool {
		now := time.Now()
		return now.Before(end) || now.Before(bound) && !w.sawRenewals(lock)
	}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for going() {
				// A request stepped under the mutex with no I/O (a second
				// keep-alive is refused), racing the renewals' completions.
				_, _ = lock.Request(ctx, sm.Input{Kind: sm.InputKeepAliveStart})
				_ = lock.Context().Err()
				resets.Add(1)
			}
		}()
	}
	wg.Wait()
	if _, err := lock.Request(ctx, sm.Input{Kind: sm.InputClose}); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	kinds := map[sm.InputKind]int{}
	for _, k := range w.order[lock] {
		kinds[k]++
	}
	if kinds[sm.InputTimer] == 0 || kinds[sm.InputCommandDone] < 2 || kinds[sm.InputKeepAliveStart] == 0 {
		t.Fatalf("inputs stepped %v (%d requests); want requests, renewal ticks and their completions", kinds, resets.Load())
	}
}

// TestIdleLocksCostNoGoroutine_HeldKeepAliveLocksHoldNoGoroutine: 500
// keep-alive locks held by the shipped driver, idle between renewals, add
// no goroutine of their own: their timers are on one heap, their renewals
// are batched, and nothing waits while nothing is on the wire.
func TestIdleLocksCostNoGoroutine_HeldKeepAliveLocksHoldNoGoroutine(t *testing.T) {
	_, d := testDriver(t, sim.Redis84)
	ctx := context.Background()
	first, err := d.Acquire(ctx, AcquireSpec{WireKey: "warm", TTL: time.Minute, KeepAlive: true})
	if err != nil || first == nil {
		t.Fatalf("Acquire = %v, %v", first, err)
	}
	d.WaitIdle()
	before := runtime.NumGoroutine()
	const n = 500
	for i := range n {
		l, err := d.Acquire(ctx, AcquireSpec{WireKey: "k" + itoa(i), TTL: time.Minute, KeepAlive: true})
		if err != nil || l == nil {
			t.Fatalf("Acquire %d = %v, %v", i, l, err)
		}
	}
	d.WaitIdle()
	if grew := runtime.NumGoroutine() - before; grew > 8 {
		t.Fatalf("%d held keep-alive locks added %d goroutines; want none of their own (≤ 8 of the client's)", n, grew)
	}
	if armed := d.ArmedTimers(); armed != 2*(n+1) {
		t.Fatalf("%d timers armed on the heap; want a renewal and a deadline per lock (%d)", armed, 2*(n+1))
	}
}

// TestStaleTimerFiresAreIgnored_ARearmedTimerTicksOnlyAtItsLatestArming:
// on the driver's timer heap, a timer re-armed later never ticks at its
// earlier due time, and a disarmed one never ticks.
func TestStaleTimerFiresAreIgnored_ARearmedTimerTicksOnlyAtItsLatestArming(t *testing.T) {
	clock := &stillClock{} // its timer never fires: due is called by hand
	var h timerHeap
	l, m := &Lock{}, &Lock{}
	h.arm(clock, l, sm.TimerRenewal, 1, 10*time.Millisecond)
	h.arm(clock, l, sm.TimerRenewal, 2, 30*time.Millisecond) // re-armed: seq 1 is stale
	h.arm(clock, m, sm.TimerDeadline, 3, 10*time.Millisecond)
	h.disarm(m, sm.TimerDeadline)
	clock.now = 20 * time.Millisecond
	var buf [4]lockTick
	if ticks := h.due(clock, buf[:0]); len(ticks) != 0 {
		t.Fatalf("ticks at 20ms %+v; want none (re-armed for 30ms, the other disarmed)", ticks)
	}
	clock.now = 30 * time.Millisecond
	if ticks := h.due(clock, buf[:0]); len(ticks) != 1 || ticks[0].seq != 2 || ticks[0].lock != l {
		t.Fatalf("ticks at 30ms %+v; want the latest arming (seq 2) of the re-armed timer", ticks)
	}
}

func itoa(i int) string { return strconvItoa(i) }
