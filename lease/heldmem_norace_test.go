//go:build !race

package lease

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"
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
