package lease

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// pairOn returns an uncontended TryAcquire + Release pair on locks.
func pairOn(tb testing.TB, locks *Locks) func() {
	ctx := context.Background()
	return func() {
		a, err := locks.TryAcquire(ctx, "k", time.Minute)
		if err != nil || !a.Acquired() {
			tb.Fatalf("TryAcquire = %v, %v", a.Acquired(), err)
		}
		if out, err := a.Lock().Release(ctx); out != Released || err != nil {
			tb.Fatalf("Release = %v, %v", out, err)
		}
	}
}

// leastAllocs is the least of three testing.AllocsPerRun measurements of
// f: what else the process does can only add to a count.
func leastAllocs(f func()) float64 {
	least := testing.AllocsPerRun(200, f)
	for range 2 {
		least = min(least, testing.AllocsPerRun(200, f))
	}
	return least
}

// warnLogger logs warnings only, to nowhere: the usual production setting.
func warnLogger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// TestTelemetryIsOptIn_APairWithoutTelemetryAllocatesNoMore: without
// telemetry options the uncontended TryAcquire + Release pair allocates no
// more than the baseline measured before telemetry existed (nothing of it
// runs: the observer is nil), and a logger that leaves debug off adds no
// allocation either. With both providers the figure is logged.
func TestTelemetryIsOptIn_APairWithoutTelemetryAllocatesNoMore(t *testing.T) {
	addr := startSimProcess(t)
	client := newClient(t, []string{addr}, "", simPassword, false)
	off := newLocks(t, client)
	if off.core.obs != nil {
		t.Fatal("Locks without telemetry options has an observer")
	}
	quiet := newLocks(t, client, WithLogger(warnLogger()))
	tel := newTelemetry(t)
	on := newLocks(t, client, tel.options(WithLogger(warnLogger()))...)
	offN, quietN, onN := leastAllocs(pairOn(t, off)), leastAllocs(pairOn(t, quiet)), leastAllocs(pairOn(t, on))
	t.Logf("allocs per pair: %v without telemetry (baseline %d), %v with a warn-level logger, %v with metrics, traces and the logger",
		offN, pairAllocsBaseline, quietN, onN)
	if offN > pairAllocsBaseline {
		t.Errorf("a pair without telemetry allocates %v times; want at most the baseline %d", offN, pairAllocsBaseline)
	}
	if quietN > offN {
		t.Errorf("a pair with a warn-level logger allocates %v times, %v without one; want no more", quietN, offN)
	}
	if n := tel.sum(t, "respire.lock.acquisitions", str(attrResult, "acquired")); n < 600 {
		t.Errorf("the pairs with telemetry recorded %d acquisitions; want every one", n)
	}
}

// BenchmarkTelemetryPair measures an uncontended TryAcquire + Release pair
// (one goroutine, context.Background()) without telemetry, with a
// warn-level logger, with metrics, with traces, and with everything, on the
// real redis-server of RESPIRE_REAL_REDIS70 when set, else an in-process
// Redis 8.4 sim:
//
//	scripts/with-servers.sh go test -run '^$' -bench TelemetryPair -benchmem -count 5 ./lease/
func BenchmarkTelemetryPair(b *testing.B) {
	addr, password := os.Getenv("RESPIRE_REAL_REDIS70"), os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
	if addr == "" {
		srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Redis84, Password: simPassword})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		addr, password = srv.Addr(), simPassword
	}
	client := newClient(b, []string{addr}, "", password, false)
	tel := newTelemetry(b)
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"off", nil},
		{"warn-logger", []Option{WithLogger(warnLogger())}},
		{"metrics", []Option{WithMeterProvider(tel.meters)}},
		{"traces", []Option{WithTracerProvider(tel.traces)}},
		{"all", tel.options(WithLogger(warnLogger()))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			locks, err := New(client, bc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer locks.Close()
			pair := pairOn(b, locks)
			pair() // the session opens outside the measurement
			var lat latencies
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				pair()
				lat.add(time.Since(start))
			}
			b.ReportMetric(float64(lat.median().Nanoseconds()), "p50-ns")
		})
		tel.spans.Reset()
	}
}

// latencies is a histogram of durations in microseconds (up to 100 ms),
// kept without allocating per measurement.
type latencies struct {
	counts [100_000]int64
	n      int64
}

func (l *latencies) add(d time.Duration) {
	us := min(int(d/time.Microsecond), len(l.counts)-1)
	l.counts[us]++
	l.n++
}

// median is the histogram's median, to the microsecond.
func (l *latencies) median() time.Duration {
	seen := int64(0)
	for us, c := range l.counts {
		seen += c
		if 2*seen >= l.n {
			return time.Duration(us) * time.Microsecond
		}
	}
	return 0
}
