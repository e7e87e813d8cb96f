package bench

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	respiregoredis "github.com/respire-go/respire/goredis"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/rueidislease"
	"github.com/respire-go/respire/valkeygo"
)

// BenchmarkHeldPerAdapter holds RESPIRE_BENCH_HELD locks (default 10,000)
// with WithKeepAlive and Lock.Context on each adapter, its client at its
// defaults (push on), past their first renewal (lease 10 s, held 7.5 s),
// and reports the live heap per lock after GC against before (heap-B/lock;
// the keys, built here, are counted) and that plus goroutine stacks
// (B/lock). With RESPIRE_BENCH_HEAPPROFILE=F it writes the heap profiles
// F-<adapter> and F-<adapter>.before; run with -test.memprofilerate=1 and
// compare with go tool pprof -sample_index=inuse_space -base:
//
//	bash scripts/with-servers.sh env -C bench go test -run '^$' -bench HeldPerAdapter -benchtime 1x
func BenchmarkHeldPerAdapter(b *testing.B) {
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("RESPIRE_BENCH_HELD")); err == nil && v > 0 {
		n = v
	}
	addr, password := server(b)
	for _, adapter := range []string{"rueidis", "goredis", "valkeygo"} {
		b.Run(adapter, func(b *testing.B) {
			locks := adapterLocks(b, adapter, addr, password)
			defer locks.Close()
			warm, err := locks.Acquire(context.Background(), "bench:held:warm", 10*time.Second, lease.WithKeepAlive())
			if err != nil {
				b.Fatal(err)
			}
			_ = warm.Close()
			profile := os.Getenv("RESPIRE_BENCH_HEAPPROFILE")
			for range b.N {
				heap0, all0 := heapAndStacks(b, profile, adapter+".before")
				held := holdWithContext(b, locks, n)
				time.Sleep(7500 * time.Millisecond) // past the first renewal
				heap1, all1 := heapAndStacks(b, profile, adapter)
				b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-B/lock")
				b.ReportMetric(float64(all1-all0)/float64(n), "B/lock")
				for _, l := range held {
					if err := l.Context().Err(); err != nil {
						b.Errorf("a held lock ended: %v", context.Cause(l.Context()))
					}
					_ = l.Close()
				}
			}
		})
	}
}

// adapterLocks is Locks on a client of adapter's at its defaults, closed
// when the benchmark ends.
func adapterLocks(b *testing.B, adapter, addr, password string) *lease.Locks {
	var locks *lease.Locks
	var err error
	switch adapter {
	case "rueidis":
		client, cerr := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: password})
		if cerr != nil {
			b.Fatal(cerr)
		}
		b.Cleanup(client.Close)
		locks, err = rueidislease.New(client)
	case "goredis":
		client := redis.NewClient(&redis.Options{Addr: addr, Password: password})
		b.Cleanup(func() { _ = client.Close() })
		locks, err = respiregoredis.New(client)
	case "valkeygo":
		client, cerr := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Password: password})
		if cerr != nil {
			b.Fatal(cerr)
		}
		b.Cleanup(client.Close)
		locks, err = valkeygo.New(client)
	}
	if err != nil {
		b.Fatal(err)
	}
	return locks
}

// heapAndStacks returns, after a full GC, the heap in use and that plus
// goroutine stacks, and writes the heap profile to profile-name unless
// profile is empty.
func heapAndStacks(b *testing.B, profile, name string) (heap, all uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if profile != "" {
		f, err := os.Create(profile + "-" + name)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.WriteHeapProfile(f); err != nil {
			b.Fatal(err)
		}
	}
	return ms.HeapAlloc, ms.HeapAlloc + ms.StackInuse
}

// holdWithContext takes n locks with WithKeepAlive from 64 goroutines,
// each one's Context asked for.
func holdWithContext(b *testing.B, locks *lease.Locks, n int) []*lease.Lock {
	held := make([]*lease.Lock, n)
	prefix := "bench:held:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 64 {
				l, err := locks.Acquire(context.Background(), prefix+strconv.Itoa(i), 10*time.Second, lease.WithKeepAlive())
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
	return held
}
