package actor

import (
	"context"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// BenchmarkDeadlineBurstFiring measures what the driver's timer heap pays
// when the deadlines of many plain locks (no keep-alive) fall due at one
// instant: on a virtual clock every lock is acquired at time 0, so one
// Advance runs the whole burst on this goroutine. One op is the burst of
// 20,000 locks, timed from the Advance until every lock's Context is done
// ("waiters": one goroutine per lock waits on Done, and is woken; "no-waiters":
// the Context exists, nothing waits on it). The acquisitions are not timed.
// ns/lock is wall time, cpu-ns/lock the process's CPU time (every
// goroutine's, the waiters' included) and fire-cpu-ns/lock the CPU time of
// the thread that ran the firing (Linux): on a busy machine the first grows
// with the load, the others much less.
//
//	go test -run '^$' -bench DeadlineBurstFiring -benchtime 3x -benchmem ./actor
func BenchmarkDeadlineBurstFiring(b *testing.B) {
	for _, waiters := range []bool{true, false} {
		name := "no-waiters"
		if waiters {
			name = "waiters"
		}
		b.Run(name, func(b *testing.B) { deadlineBurst(b, 20_000, waiters) })
	}
}

func deadlineBurst(b *testing.B, n int, waiters bool) {
	const ttl = 3 * time.Second
	clock := &ManualClock{}
	_, d := testDriverOn(b, sim.Config{Profile: sim.Redis84}, func(c *Config) { c.Clock, c.Push = clock, false })
	ctx := context.Background()
	b.ReportAllocs()
	b.StopTimer()
	var cpu, fire time.Duration // the process's CPU time during the bursts, and the firing thread's
	for iter := range b.N {
		locks := make([]*Lock, n)
		var acquired sync.WaitGroup
		const workers = 64
		for w := range workers {
			acquired.Go(func() {
				for i := w; i < n; i += workers {
					l, err := d.Acquire(ctx, AcquireSpec{WireKey: "burst:" + itoa(iter) + ":" + itoa(i), TTL: ttl})
					if err != nil || l == nil {
						b.Errorf("Acquire = %v, %v", l, err)
						return
					}
					locks[i] = l
				}
			})
		}
		acquired.Wait()
		if b.Failed() {
			b.FailNow()
		}
		var woke sync.WaitGroup
		for _, l := range locks {
			done := l.Context().Done()
			if waiters {
				woke.Go(func() { <-done })
			}
		}
		runtime.GC()           // the acquisitions' garbage is not the burst's
		runtime.LockOSThread() // the firing runs inside Advance, on this thread
		cpuBefore, fireBefore := cpuTime(syscall.RUSAGE_SELF), cpuTime(rusageThread)
		b.StartTimer()
		clock.Advance(ttl)
		fire += cpuTime(rusageThread) - fireBefore
		woke.Wait()
		b.StopTimer()
		cpu += cpuTime(syscall.RUSAGE_SELF) - cpuBefore
		runtime.UnlockOSThread()
		for _, l := range locks {
			if l.Context().Err() == nil {
				b.Fatal("a lock's Context lives past its deadline")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/lock")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/lock")
	b.ReportMetric(float64(fire.Nanoseconds())/float64(b.N*n), "fire-cpu-ns/lock")
}

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// cpuTime is the CPU time (user and system) used so far by who
// (syscall.RUSAGE_SELF: the process; rusageThread: this thread).
func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
