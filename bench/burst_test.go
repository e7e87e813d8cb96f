package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/valkey-io/valkey-go"

	respiregoredis "github.com/respire-go/respire/goredis"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/rueidislease"
	sm "github.com/respire-go/respire/statemachine"
	"github.com/respire-go/respire/valkeygo"
)

// burstLocks is how many locks BenchmarkDeadlineBurst lets run out at once
// (override with RESPIRE_BENCH_BURST).
func burstLocks() int {
	if n, err := strconv.Atoi(os.Getenv("RESPIRE_BENCH_BURST")); err == nil && n > 0 {
		return n
	}
	return 20_000
}

// burstSlack is how long after the first acquisition is sent the burst
// falls due, beyond burstTTL: room for all the acquisitions (20,000 took
// over 4 s at load 20; override with RESPIRE_BENCH_BURST_SLACK, a Go
// duration, when they take longer).
func burstSlack() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("RESPIRE_BENCH_BURST_SLACK")); err == nil && d > 0 {
		return d
	}
	return 10 * time.Second
}

// burstTTL is the shortest lease of the burst: every lock is acquired with
// a lease of at least burstTTL (plus what is left of burstSlack) that ends
// at the burst's instant.
const burstTTL = 3 * time.Second

// BenchmarkDeadlineBurst measures how late Lock.Context().Done() closes
// when many plain locks (no keep-alive) run out together. It acquires
// burstLocks() locks, each with the lease (≥ 3 s) that makes its local
// deadline — the end of its RemainingEstimate, already short of the
// server's expiry by the drift margin — fall at one instant; one goroutine
// per lock waits on its Context's Done, as user code selecting on it does,
// and records how long after its lock's local deadline it woke. It reports
// the lateness's p50, p99 and max (ms), and how many woke later than their
// drift margin (32 ms for a 3 s lease): past the earliest the server may
// have expired the key. It measures; it asserts nothing about timing. Run
// it beside CPU burners to see a busy process:
//
//	bash scripts/with-servers.sh env -C bench go test -run '^$' -bench DeadlineBurst -benchtime 1x ./
//
// (at load 30 and more, give the acquisitions more room:
// RESPIRE_BENCH_BURST_SLACK=25s).
func BenchmarkDeadlineBurst(b *testing.B) {
	b.Run("rueidis", func(b *testing.B) {
		locks, err := rueidislease.New(newClient(b))
		if err != nil {
			b.Fatal(err)
		}
		defer locks.Close()
		runBurst(b, locks)
	})
	b.Run("goredis", func(b *testing.B) {
		addr, password := server(b)
		client := redis.NewClient(&redis.Options{Addr: addr, Password: password})
		defer client.Close()
		locks, err := respiregoredis.New(client)
		if err != nil {
			b.Fatal(err)
		}
		defer locks.Close()
		runBurst(b, locks)
	})
	b.Run("valkeygo", func(b *testing.B) {
		addr, password := server(b)
		client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Password: password, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		defer client.Close()
		locks, err := valkeygo.New(client)
		if err != nil {
			b.Fatal(err)
		}
		defer locks.Close()
		runBurst(b, locks)
	})
}

func runBurst(b *testing.B, locks *lease.Locks) {
	n := burstLocks()
	for range b.N {
		late, margins := burst(b, locks, n)
		beyond := 0
		for i, d := range late {
			if d > margins[i] {
				beyond++
			}
		}
		slices.Sort(late)
		p := func(q float64) float64 { return ms(late[min(len(late)-1, int(q*float64(len(late))))]) }
		b.ReportMetric(p(0.50), "p50-ms")
		b.ReportMetric(p(0.99), "p99-ms")
		b.ReportMetric(ms(late[len(late)-1]), "max-ms")
		b.ReportMetric(float64(beyond), "past-margin")
		b.Logf("%s: %d locks due together, Done() after the local deadline: p50 %.1f ms, p99 %.1f ms, max %.1f ms; "+
			"%d past their drift margin (%v for a 3 s lease) (GOMAXPROCS %d, load %s)", b.Name(), n, p(0.50), p(0.99),
			ms(late[len(late)-1]), beyond, sm.DefaultDrift().Of(burstTTL), runtime.GOMAXPROCS(0), loadAverage())
	}
}

// burst acquires n locks due at one instant and returns how late each
// one's Context().Done() closed after its local deadline, and each one's
// drift margin (by how much its local deadline precedes the server's
// expiry).
func burst(b *testing.B, locks *lease.Locks, n int) (late, margins []time.Duration) {
	ctx := context.Background()
	due := time.Now().Add(burstTTL + burstSlack())
	prefix := "bench:burst:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	late, margins = make([]time.Duration, n), make([]time.Duration, n)
	held := make([]*lease.Lock, n)
	var acquired, woke sync.WaitGroup
	const workers = 64
	errs := make(chan error, workers)
	for w := range workers {
		acquired.Add(1)
		go func() {
			defer acquired.Done()
			for i := w; i < n; i += workers {
				ttl := time.Until(due).Truncate(time.Millisecond)
				if ttl < burstTTL/2 {
					errs <- fmt.Errorf("the acquisitions took longer than the slack %v (raise RESPIRE_BENCH_BURST_SLACK)", burstSlack())
					return
				}
				lock, err := locks.Acquire(ctx, prefix+strconv.Itoa(i), ttl)
				if err != nil {
					errs <- fmt.Errorf("Acquire %d: %w", i, err)
					return
				}
				held[i], margins[i] = lock, sm.DefaultDrift().Of(ttl)
				// Now before the estimate: the deadline read is never later
				// than the lock's, so lateness is never understated.
				now := time.Now()
				deadline := now.Add(lock.RemainingEstimate())
				done := lock.Context().Done()
				woke.Add(1)
				go func() {
					defer woke.Done()
					<-done
					late[i] = time.Since(deadline)
				}()
			}
		}()
	}
	acquired.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	if time.Now().After(due) {
		b.Fatalf("the acquisitions ended after the burst was due (raise RESPIRE_BENCH_BURST_SLACK)")
	}
	woke.Wait()
	for _, l := range held {
		_ = l.Close() // ended already: frees the handle, sends nothing
	}
	return late, margins
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// loadAverage is the machine's 1-minute load average, or "?".
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil || len(raw) == 0 {
		return "?"
	}
	if i := slices.Index(raw, ' '); i > 0 {
		return string(raw[:i])
	}
	return "?"
}
