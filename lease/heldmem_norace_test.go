//go:build !race

package lease

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// heldForMemory acquires n keep-alive locks on fresh keys of prefix and
// closes them when the test ends.
func heldForMemory(t *testing.T, locks *Locks, prefix string, n int) []*Lock {
	t.Helper()
	held := make([]*Lock, n)
	for i := range held {
		l, err := locks.Acquire(context.Background(), prefix+strconv.Itoa(i), time.Minute, WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		held[i] = l
	}
	t.Cleanup(func() {
		for _, l := range held {
			_ = l.Close()
		}
	})
	return held
}

// leastBytesPerLock is the fewest heap bytes that each of three rounds
// allocated per lock while ask ran once on each of n fresh held locks (on
// keys of prefix):
// what else the process does can only add to a round.
func leastBytesPerLock(t *testing.T, locks *Locks, prefix string, n int, ask func(*Lock)) float64 {
	t.Helper()
	least := -1.0
	for round := range 3 {
		held := heldForMemory(t, locks, prefix+strconv.Itoa(round)+":", n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, l := range held {
			ask(l)
		}
		runtime.ReadMemStats(&after)
		perLock := float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
		if least < 0 || perLock < least {
			least = perLock
		}
	}
	return least
}

// TestHeldLockIsSmall_ItsContextAllocatesNothingUntilWaitedOn: asking a
// held lock for its Context allocates nothing (the context is the lock
// itself; it was 120 bytes, a context.WithCancelCause and what kept it),
// and waiting on it (Done) allocates its channel (112 bytes) and the 32
// bytes that keep it, nothing more (it was 232: the 120 and the channel). (The bounds leave the process's
// background work a few bytes.)
func TestHeldLockIsSmall_ItsContextAllocatesNothingUntilWaitedOn(t *testing.T) {
	addr := startSimProcess(t)
	locks := newLocks(t, newClient(t, []string{addr}, "", simPassword, false))
	perLock := leastBytesPerLock(t, locks, "ctx", 1000, func(l *Lock) { _ = l.Context() })
	t.Logf("Lock.Context allocates %.1f bytes per lock", perLock)
	if perLock >= 8 {
		t.Errorf("Lock.Context allocates %.1f bytes per lock; want under 8 (0: the context is the lock)", perLock)
	}
	perLock = leastBytesPerLock(t, locks, "done", 1000, func(l *Lock) { _ = l.Context().Done() })
	t.Logf("Lock.Context().Done() allocates %.1f bytes per lock", perLock)
	if perLock >= 152 {
		t.Errorf("Lock.Context().Done() allocates %.1f bytes per lock; want under 152 (144: its channel and 32 bytes)", perLock)
	}
}

// liveHeap is the heap in use after a full GC.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestHeldLockIsSmall_HoldDurationMetricKeepsNoHeapPerLock: with metrics
// on, what respire.lock.hold.duration remembers of each held lock (when it
// was seen held) is a field of the Lock: no heap per held lock (a map of
// held locks kept ~30 bytes each), and nothing once the locks have ended.
func TestHeldLockIsSmall_HoldDurationMetricKeepsNoHeapPerLock(t *testing.T) {
	obs, err := newObserver(&options{meterProvider: sdkmetric.NewMeterProvider()})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10_000
	held := make([]Lock, n)
	obs.addHeld(&held[0], 1) // the attribute set, made once
	obs.holdEnded(&held[0], true)
	before := liveHeap()
	for i := range held {
		obs.addHeld(&held[i], 1)
	}
	perLock := float64(liveHeap()-before) / n
	for i := range held {
		obs.addHeld(&held[i], -1)
		obs.holdEnded(&held[i], true)
	}
	left := liveHeap() - before
	t.Logf("hold starts keep %.1f bytes per held lock, %d bytes once they ended", perLock, left)
	if perLock > 1 {
		t.Errorf("the hold-duration metric keeps %.1f bytes per held lock; want none (at most 1)", perLock)
	}
	if left > 4096 {
		t.Errorf("the hold-duration metric keeps %d bytes once every lock ended; want at most 4096", left)
	}
	runtime.KeepAlive(held)
}

// heldBytesPerLock is the live heap (after GC) that n keep-alive locks
// held on fresh keys of prefix, each one's Context asked for, keep per
// lock, the least of three rounds (what else the process does can only
// add to a round). The keys are the test's own strings, counted too.
func heldBytesPerLock(t *testing.T, locks *Locks, prefix string, n int) float64 {
	t.Helper()
	least := -1.0
	for round := range 3 {
		before := liveHeap()
		held := heldForMemory(t, locks, prefix+strconv.Itoa(round)+":", n)
		for _, l := range held {
			_ = l.Context()
		}
		perLock := float64(liveHeap()-before) / float64(n)
		if least < 0 || perLock < least {
			least = perLock
		}
		for _, l := range held {
			_ = l.Close()
		}
	}
	return least
}

// TestHeldLockIsSmall_AHeldKeepAliveLockKeepsUnder300Bytes: a lock held
// with WithKeepAlive, its Context asked for, keeps under 288 bytes of heap
// with push off and under 300 with push on (metrics on; issue 28's target
// is 300): its Lock (208), its owner token (32), its key (16 here), its
// slot of the timer heap and, with push, of the push hub's holders' table;
// 272.5 and 285.5 measured, so a Lock one size class larger (224) fails
// both (BenchmarkHeldKeepAlive measures the same at 10,000 on a real
// server; docs/architecture.md has the table).
func TestHeldLockIsSmall_AHeldKeepAliveLockKeepsUnder300Bytes(t *testing.T) {
	addr := startSimProcess(t)
	for _, push := range []bool{false, true} {
		opts := []Option{WithMeterProvider(sdkmetric.NewMeterProvider())}
		if !push {
			opts = append(opts, WithoutPush())
		}
		locks := newLocks(t, newClient(t, []string{addr}, "", simPassword, false), opts...)
		perLock := heldBytesPerLock(t, locks, "held"+strconv.FormatBool(push), 5000)
		bound := 288.0
		if push {
			bound = 300
		}
		t.Logf("push %v: a held keep-alive lock keeps %.1f bytes", push, perLock)
		if perLock >= bound {
			t.Errorf("push %v: a held keep-alive lock keeps %.1f bytes; want under %v", push, perLock, bound)
		}
	}
}
