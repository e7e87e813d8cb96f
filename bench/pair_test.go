package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/rueidislease"
)

// server returns the private redis-server of the environment, or skips.
func server(b *testing.B) (addr, password string) {
	b.Helper()
	addr = os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		b.Skip("RESPIRE_REAL_REDIS70 not set: no private redis-server (make bench starts one)")
	}
	return addr, os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
}

func newClient(b *testing.B) rueidis.Client {
	b.Helper()
	addr, password := server(b)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: password, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	return client
}

// pair is one acquire+release of key.
type pair func(ctx context.Context, key string) error

// rawPair does the wire work by hand: SET NX PX, then EVALSHA compare-and-delete.
func rawPair(client rueidis.Client) pair {
	ctx := context.Background()
	if err := client.Do(ctx, client.B().ScriptLoad().Script(conn.ReleaseScript).Build()).Error(); err != nil {
		panic(err)
	}
	return func(ctx context.Context, key string) error {
		token := lease.NewToken().Bytes()
		ok, err := client.Do(ctx, client.B().Set().Key(key).Value(rueidis.BinaryString(token)).Nx().PxMilliseconds(30000).Build()).AsBool()
		if err != nil || !ok {
			return fmt.Errorf("raw SET NX = %v, %v", ok, err)
		}
		n, err := client.Do(ctx, client.B().Evalsha().Sha1(conn.ReleaseScriptSHA).Numkeys(1).Key(key).Arg(rueidis.BinaryString(token)).Build()).AsInt64()
		if err != nil || n != 1 {
			return fmt.Errorf("raw release = %v, %v", n, err)
		}
		return nil
	}
}

// leasePair is lease.TryAcquire + Lock.Release on the wire engine over
// rueidis (rueidislease).
func leasePair(b *testing.B, client rueidis.Client) pair {
	locks, err := rueidislease.New(client)
	if err != nil {
		b.Fatal(err)
	}
	return locksPair(b, locks)
}

// locksPair is TryAcquire + Release on locks.
func locksPair(b *testing.B, locks *lease.Locks) pair {
	b.Cleanup(locks.Close)
	return func(ctx context.Context, key string) error {
		attempt, err := locks.TryAcquire(ctx, key, 30*time.Second)
		if err != nil || !attempt.Acquired() {
			return fmt.Errorf("TryAcquire = %v, %v", attempt.Acquired(), err)
		}
		out, err := attempt.Lock().Release(ctx)
		if err != nil || out != lease.Released {
			return fmt.Errorf("Release = %v, %v", out, err)
		}
		return nil
	}
}

type implementation struct {
	name string
	run  pair
}

// implementations are the pairs compared, each on a client of its own (so
// that one's commands never change the mode of another's connections).
func implementations(b *testing.B) []implementation {
	return []implementation{{"raw-rueidis", rawPair(newClient(b))}, {"lease", leasePair(b, newClient(b))}}
}

// readsProcessed is the server's total_reads_processed (INFO stats): how
// many socket reads it made. Fewer reads per pair mean bigger pipelined
// batches, which is what decides throughput when client and server share
// the machine's cores.
func readsProcessed(b *testing.B, client rueidis.Client) int64 {
	info, err := client.Do(context.Background(), client.B().Info().Section("stats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_reads_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("INFO stats has no total_reads_processed")
	return 0
}

// BenchmarkPairs64 runs TryAcquire+Release pairs from 64 goroutines on
// distinct keys, raw rueidis and lease interleaved in short rounds (so load
// from elsewhere on the machine hits both alike), and reports each one's
// pairs/s, the server's socket reads per pair, and lease/raw; the target is
// lease >= 0.9 x raw.
func BenchmarkPairs64(b *testing.B) {
	const workers, round = 64, 250 * time.Millisecond
	impls := implementations(b)
	stats := newClient(b)
	done := make([]int64, len(impls))
	reads := make([]int64, len(impls))
	spent := make([]time.Duration, len(impls))
	for _, impl := range impls { // warm up: connections, sessions, scripts
		if _, _, err := runRound(impl.name, impl.run, workers, round); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for r := 0; r < max(8, b.N); r++ {
		for i, impl := range impls {
			before := readsProcessed(b, stats)
			n, d, err := runRound(impl.name, impl.run, workers, round)
			if err != nil {
				b.Fatal(err)
			}
			reads[i] += readsProcessed(b, stats) - before - 1 // less the INFO itself
			done[i] += n
			spent[i] += d
		}
	}
	b.StopTimer()
	rates := make([]float64, len(impls))
	for i, impl := range impls {
		rates[i] = float64(done[i]) / spent[i].Seconds()
		b.ReportMetric(rates[i], impl.name+"-pairs/s")
		b.ReportMetric(float64(reads[i])/float64(done[i]), impl.name+"-server-reads/pair")
	}
	b.ReportMetric(rates[1]/rates[0], "lease/raw")
}

// runRound runs pairs from workers goroutines for about d.
func runRound(name string, run pair, workers int, d time.Duration) (int64, time.Duration, error) {
	ctx := context.Background()
	var pairs atomic.Int64
	var failure atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "bench:pairs64:" + name + ":" + strconv.Itoa(w)
			for time.Now().Before(deadline) {
				if err := run(ctx, key); err != nil {
					failure.Store(err)
					return
				}
				pairs.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := failure.Load().(error); err != nil {
		return 0, 0, err
	}
	return pairs.Load(), time.Since(start), nil
}

// BenchmarkPairSerial runs pairs from one goroutine, raw and lease
// alternating pair by pair, and reports each one's median latency (p50),
// lease/raw of the medians, and lease's allocations per pair; the targets
// are p50 <= 1.1 x raw and <= 16 allocs per pair.
func BenchmarkPairSerial(b *testing.B) {
	benchmarkPairSerial(b, context.Background())
}

// BenchmarkPairSerialRequestContext is BenchmarkPairSerial with a
// cancellable context, as a service passes from its request. rueidis then
// uses its background reader/writer for raw commands too (pipe.go Do: a ctx
// with Done and no deadline is queued); conn's sessions then use that mode
// too (with context.Background() both stay synchronous).
func BenchmarkPairSerialRequestContext(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchmarkPairSerial(b, ctx)
}

func benchmarkPairSerial(b *testing.B, ctx context.Context) {
	impls := implementations(b)
	latencies := make([][]time.Duration, len(impls))
	b.ResetTimer()
	for range max(b.N, 1000) {
		for i, impl := range impls {
			start := time.Now()
			if err := impl.run(ctx, "bench:serial:"+impl.name); err != nil {
				b.Fatal(err)
			}
			latencies[i] = append(latencies[i], time.Since(start))
		}
	}
	b.StopTimer()
	p50 := make([]float64, len(impls))
	for i, impl := range impls {
		slices.Sort(latencies[i])
		p50[i] = float64(latencies[i][len(latencies[i])/2].Nanoseconds()) / 1e3
		b.ReportMetric(p50[i], impl.name+"-p50-µs")
	}
	b.ReportMetric(p50[1]/p50[0], "lease/raw-p50")
	for _, impl := range impls {
		allocs := testing.AllocsPerRun(200, func() {
			if err := impl.run(ctx, "bench:serial:"+impl.name); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(allocs, impl.name+"-allocs/pair")
	}
}
