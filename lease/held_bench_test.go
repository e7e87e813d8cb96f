package lease

import (
	"context"
	"flag"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

var (
	heldLocks   = flag.Int("held.locks", 100000, "BenchmarkHeldKeepAlive: how many locks to hold")
	heldPush    = flag.Bool("held.push", false, "BenchmarkHeldKeepAlive: push on (the default of New) instead of WithoutPush")
	heldProfile = flag.String("held.heapprofile", "", "BenchmarkHeldKeepAlive: write a heap profile while the locks are held to this file (and one before they are taken to this file + \".before\", for pprof -base)")
	heldRequest = flag.Bool("held.request", false, "BenchmarkHeldKeepAlive: acquire each lock under a context.WithTimeout of its own (a request's ctx) instead of context.Background()")
)

// BenchmarkHeldKeepAlive holds -held.locks locks (default 100,000) with
// WithKeepAlive and Lock.Context on the real redis-server of
// RESPIRE_REAL_REDIS70, with push off (WithoutPush: the client's own cost of
// a held lock), past their first renewal (lease 10s, held 7.5s), and reports
// the heap and goroutine stacks per lock (after GC, against before; and
// the heap alone, heap-B/lock), the
// goroutines while held and the worst renewal lateness (the
// respire.lock.renewal.lateness histogram) as a share of the renewal
// interval. Nothing is asserted about its timing:
//
//	scripts/with-servers.sh go test ./lease/ -run '^$' -bench HeldKeepAlive -benchtime 1x [-held.locks N] [-held.push] [-held.request]
func BenchmarkHeldKeepAlive(b *testing.B) {
	addr := os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		b.Skip("RESPIRE_REAL_REDIS70 not set: no real redis-server (scripts/with-servers.sh starts one)")
	}
	client := newClient(b, []string{addr}, "", os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD"), false)
	reader := sdkmetric.NewManualReader()
	opts := []Option{WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))}
	if !*heldPush {
		opts = append(opts, WithoutPush())
	}
	locks, err := New(client, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer locks.Close()
	const ttl, hold = 10 * time.Second, 7500 * time.Millisecond
	for range b.N {
		n := *heldLocks
		held := make([]*Lock, n)
		heap0, bytes0 := liveHeapAndStacks()
		goroutines0 := runtime.NumGoroutine()
		if *heldProfile != "" {
			writeHeapProfile(b, *heldProfile+".before") // for pprof -base
		}
		holdAll(b, locks, held, ttl)
		time.Sleep(hold) // past the first renewal (at about half the lease)
		heap1, bytes1 := liveHeapAndStacks()
		goroutines1 := runtime.NumGoroutine()
		writeHeapProfile(b, *heldProfile)
		for _, l := range held {
			if l.Context().Err() != nil {
				b.Errorf("a lock was lost while held: %v", context.Cause(l.Context()))
				break
			}
		}
		b.ReportMetric(float64(bytes1-bytes0)/float64(n), "B/lock")
		b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-B/lock")
		b.ReportMetric(float64(goroutines1-goroutines0), "goroutines")
		b.ReportMetric(worstLateness(b, reader)/(ttl/2).Seconds()*100, "%-worst-late")
		for _, l := range held {
			_ = l.Close()
		}
	}
}

// holdAll fills held with locks taken WithKeepAlive, from 64 goroutines,
// each one's Context asked for (protected work runs under it).
func holdAll(b *testing.B, locks *Locks, held []*Lock, ttl time.Duration) {
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(held); i += 64 {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if *heldRequest {
					ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
				}
				l, err := locks.Acquire(ctx, "bench:held:"+strconv.Itoa(i), ttl, WithKeepAlive())
				cancel()
				if err != nil {
					b.Error(err)
					return
				}
				l.Context()
				held[i] = l
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// liveHeapAndStacks returns, after a full GC, the heap in use and that
// plus goroutine stacks. The stacks include those the runtime keeps for reuse with
// exited goroutines (holdAll's 64 workers: ~50 B a lock at 10,000), which
// heap-B/lock leaves out.
func liveHeapAndStacks() (heap, heapAndStacks int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc), int64(ms.HeapAlloc + ms.StackInuse)
}

// worstLateness is the largest renewal lateness recorded, in seconds.
func worstLateness(b *testing.B, reader *sdkmetric.ManualReader) float64 {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		b.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "respire.lock.renewal.lateness" {
				for _, dp := range h.DataPoints {
					if v, ok := dp.Max.Value(); ok {
						return v
					}
				}
			}
		}
	}
	return 0
}

// writeHeapProfile writes the live heap to path, unless path is empty.
func writeHeapProfile(b *testing.B, path string) {
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}
