package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/rueidislease"
)

// heldLocks is how many locks BenchmarkHeldLocks holds (override with
// RESPIRE_BENCH_HELD for a quicker run).
func heldLocks() int {
	if n, err := strconv.Atoi(os.Getenv("RESPIRE_BENCH_HELD")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// liveBytes is the heap in use plus goroutine stacks, after a GC.
func liveBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse
}

// BenchmarkHeldLocks holds 100,000 locks at once, each with a keep-alive, and
// reports the memory per held lock (heap + goroutine stacks; target <= 3 KiB),
// the goroutines alive while they are held, and the worst renewal lateness
// observed as a fraction of the renewal interval (target <= 0.10): a renewal
// is due when half the lease is left, so a lock seen with less than
// interval - late left was renewed late by at least late.
func BenchmarkHeldLocks(b *testing.B) {
	locks, err := rueidislease.New(newClient(b))
	if err != nil {
		b.Fatal(err)
	}
	benchmarkHeldLocks(b, locks)
}

func benchmarkHeldLocks(b *testing.B, locks *lease.Locks) {
	const ttl = 10 * time.Second
	interval := ttl / 2
	n := heldLocks()
	defer locks.Close()
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		goroutinesBefore := runtime.NumGoroutine()
		before := liveBytes()
		held := acquireAll(b, ctx, locks, n, ttl)
		perLock := float64(liveBytes()-before) / float64(n)
		goroutines := runtime.NumGoroutine() - goroutinesBefore
		late := worstLateness(held, 2*interval+interval/2, interval)
		ended := 0
		var firstCause error
		for _, l := range held {
			if err := l.Context().Err(); err != nil {
				ended++
				firstCause = context.Cause(l.Context())
			}
		}
		if ended > 0 {
			b.Fatalf("%d of %d keep-alives ended (lateness %v): %v", ended, n, late, firstCause)
		}
		closeAll(b, held)
		b.ReportMetric(perLock, "B/held-lock")
		b.ReportMetric(float64(goroutines), "goroutines-while-held")
		b.ReportMetric(late.Seconds()/interval.Seconds(), "worst-lateness/interval")
	}
}

func acquireAll(b *testing.B, ctx context.Context, locks *lease.Locks, n int, ttl time.Duration) []*lease.Lock {
	held := make([]*lease.Lock, n)
	prefix := "bench:held:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	var wg sync.WaitGroup
	const workers = 64
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				lock, err := locks.Acquire(ctx, prefix+strconv.Itoa(i), ttl, lease.WithKeepAlive())
				if err != nil {
					errs <- fmt.Errorf("Acquire %d: %w", i, err)
					return
				}
				held[i] = lock
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return held
}

// worstLateness samples every lock's remaining estimate for d and returns how
// far below the renewal point (interval left) the lowest one fell.
func worstLateness(held []*lease.Lock, d, interval time.Duration) time.Duration {
	lowest := interval
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for i, l := range held {
			lowest = min(lowest, l.RemainingEstimate())
			if i%1000 == 0 {
				runtime.Gosched() // a sampler, not a load generator
			}
		}
	}
	return max(0, interval-lowest)
}

func closeAll(b *testing.B, held []*lease.Lock) {
	var wg sync.WaitGroup
	const workers = 64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(held); i += workers {
				if err := held[i].Close(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
