package goredis

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
)

// BenchmarkHeldLocks is the rueidis benchmark of the same name (bench/) on
// go-redis: it holds RESPIRE_BENCH_HELD locks (default 100,000) at once,
// each with a keep-alive and its Context made, taken by 64 goroutines, and
// reports the client's memory per held lock (heap + goroutine stacks,
// after a GC) and the goroutines alive while they are held:
//
//	bash scripts/with-servers.sh env -C goredis go test -run '^$' -bench HeldLocks -benchtime 1x
func BenchmarkHeldLocks(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("RESPIRE_BENCH_HELD")); err == nil && v > 0 {
		n = v
	}
	locks, err := New(benchClients(b, 1)[0])
	if err != nil {
		b.Fatal(err)
	}
	defer locks.Close()
	for range b.N {
		goroutines, before := runtime.NumGoroutine(), heapAndStacks()
		held := holdAll(b, locks, n)
		perLock := float64(heapAndStacks()-before) / float64(n)
		goroutines = runtime.NumGoroutine() - goroutines
		for _, l := range held {
			if err := l.Context().Err(); err != nil {
				b.Fatalf("a held lock ended: %v", context.Cause(l.Context()))
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(perLock, "B/held-lock")
		b.ReportMetric(float64(goroutines), "goroutines-while-held")
	}
}

// heapAndStacks is the heap in use plus goroutine stacks, after a GC.
func heapAndStacks() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse
}

// holdAll acquires n locks with a keep-alive from benchGoroutines
// goroutines and makes each one's Context, as a user running work under it
// does.
func holdAll(b *testing.B, locks *lease.Locks, n int) []*lease.Lock {
	held := make([]*lease.Lock, n)
	prefix := "bench:held:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	var wg sync.WaitGroup
	for w := range benchGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += benchGoroutines {
				lock, err := locks.Acquire(context.Background(), prefix+strconv.Itoa(i), 10*time.Second, lease.WithKeepAlive())
				if err != nil {
					b.Errorf("Acquire %d: %v", i, err)
					return
				}
				lock.Context()
				held[i] = lock
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return held
}
