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
// allocated per lock while ask ran once on each of n fresh held locks:
// what else the process does can only add to a round.
func leastBytesPerLock(t *testing.T, locks *Locks, n int, ask func(*Lock)) float64 {
	t.Helper()
	least := -1.0
	for round := range 3 {
		held := heldForMemory(t, locks, "mem"+strconv.Itoa(round)+":", n)
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

// TestHeldLockIsSmall_ItsContextCostsUnder128Bytes: asking a held lock for
// its Context allocates its cancellation (a context.WithCancelCause and
// its cancel, 96 bytes) and the 24 bytes that keep them, nothing more:
// the context handed out is the lock itself. (A wrapper of its own made it
// 144; the bound leaves the process's background work a few bytes.)
func TestHeldLockIsSmall_ItsContextCostsUnder128Bytes(t *testing.T) {
	addr := startSimProcess(t)
	locks := newLocks(t, newClient(t, []string{addr}, "", simPassword, false))
	perLock := leastBytesPerLock(t, locks, 1000, func(l *Lock) { _ = l.Context() })
	t.Logf("Lock.Context allocates %.1f bytes per lock", perLock)
	if perLock >= 128 {
		t.Errorf("Lock.Context allocates %.1f bytes per lock; want under 128 (120: its cancellation and 24 bytes)", perLock)
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

// TestHeldLockIsSmall_HoldDurationMetricKeepsAtMost48BytesPerLock: with
// metrics on, what respire.lock.hold.duration remembers of each held lock
// (when it was seen held) keeps at most 48 bytes of heap per lock, and
// nothing once the locks have ended.
func TestHeldLockIsSmall_HoldDurationMetricKeepsAtMost48BytesPerLock(t *testing.T) {
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
	if perLock > 48 {
		t.Errorf("the hold-duration metric keeps %.1f bytes per held lock; want at most 48", perLock)
	}
	if left > 4096 {
		t.Errorf("the hold-duration metric keeps %d bytes once every lock ended; want at most 4096", left)
	}
	runtime.KeepAlive(held)
}
