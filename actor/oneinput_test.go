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

// count reports how many inputs of kind were stepped on l.
func (w *stepWatch) count(l *Lock, kind sm.InputKind) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, k := range w.order[l] {
		if k == kind {
			n++
		}
	}
	return n
}

// TestOneInputAtATime_TheShippedDriverStepsALockOneInputAtATime: the
// driver production runs (over rueidis, on a sim node) gets, on one lock, a
// keep-alive whose renewal ticks come from the timer heap and whose
// completions come from the renewal sender's goroutine, while 16 goroutines
// send requests and read the lock's context without pause, then a release:
// every input is stepped alone, none overlapping another (the observer is
// told inside each step, under the lock's mutex). It runs on virtual time
// (the driver's clock and the server's): the lease cannot run out while a
// loaded machine leaves the renewal unscheduled, and each of the 40
// renewals is awaited, its completion racing the requests. Stepping a
// completion without the lock's mutex (deliverDone calling step directly)
// fails it.
func TestOneInputAtATime_TheShippedDriverStepsALockOneInputAtATime(t *testing.T) {
	w := &stepWatch{t: t, inStep: map[*Lock]*atomic.Bool{}, order: map[*Lock][]sm.InputKind{}}
	clock := &ManualClock{}
	_, d := testDriverOn(t, sim.Config{Profile: sim.Redis84, Clock: sim.NewManualClock(time.Unix(1_700_000_000, 0))},
		func(c *Config) { c.Observer, c.Clock = w, clock })
	ctx := context.Background()
	lock, err := d.Acquire(ctx, AcquireSpec{WireKey: "k", TTL: 30 * time.Millisecond, KeepAlive: true})
	if err != nil || lock == nil {
		t.Fatalf("Acquire = %v, %v", lock, err)
	}
	var wg sync.WaitGroup
	var stop atomic.Bool
	var requests atomic.Int64
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				// A request stepped under the mutex with no I/O (a second
				// keep-alive is refused), racing the renewals' completions.
				_, _ = lock.Request(ctx, sm.Input{Kind: sm.InputKeepAliveStart})
				_ = lock.Context().Err()
				requests.Add(1)
			}
		}()
	}
	const renewals = 40
	acquired := w.count(lock, sm.InputCommandDone) // the SET's
	for ticks := 0; ticks < renewals; {
		clock.Advance(time.Millisecond) // on to the next renewal tick, a millisecond at a time
		if n := w.count(lock, sm.InputTimer); n > ticks {
			ticks = n // a renewal tick (stepped inside Advance): await its renewal's completion
			waitStepped(t, w, lock, sm.InputCommandDone, acquired+ticks)
		}
		if err := lock.Context().Err(); err != nil {
			t.Fatalf("the lease ended on virtual time after %d renewal ticks: %v", ticks, context.Cause(lock.Context()))
		}
	}
	stop.Store(true)
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
	if kinds[sm.InputTimer] < renewals || kinds[sm.InputCommandDone] < renewals || kinds[sm.InputKeepAliveStart] == 0 {
		t.Fatalf("inputs stepped %v (%d requests); want requests, %d renewal ticks and their completions",
			kinds, requests.Load(), renewals)
	}
}

// waitStepped waits (bounded, generously: it only waits for an event,
// however slow the machine) until at least n inputs of kind were stepped on l.
func waitStepped(t *testing.T, w *stepWatch, l *Lock, kind sm.InputKind, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); w.count(l, kind) < n; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d inputs of kind %d stepped after a minute; want %d", w.count(l, kind), kind, n)
		}
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
	if ticks, _ := h.due(clock, buf[:0]); len(ticks) != 0 {
		t.Fatalf("ticks at 20ms %+v; want none (re-armed for 30ms, the other disarmed)", ticks)
	}
	clock.now = 30 * time.Millisecond
	if ticks, _ := h.due(clock, buf[:0]); len(ticks) != 1 || ticks[0].seq != 2 || ticks[0].lock != l {
		t.Fatalf("ticks at 30ms %+v; want the latest arming (seq 2) of the re-armed timer", ticks)
	}
}

func itoa(i int) string { return strconvItoa(i) }
