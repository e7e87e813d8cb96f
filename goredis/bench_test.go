package goredis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// The adapter against raw go-redis doing the same commands (SET NX PX,
// then the compare-and-delete script) on the real Redis 7.0, interleaved
// in short rounds so that load from elsewhere on the machine hits both
// alike:
//
//	bash scripts/with-servers.sh env -C goredis go test -run '^$' -bench 'Pair' -benchtime 20x
//
// A pair is one acquire + release. (bench/'s BenchmarkPairs64 has raw
// rueidis for the cross-client ratio.)

const benchGoroutines = 64

// benchClients returns n go-redis clients on the real Redis 7.0 (locked
// for the benchmark) with room for the benchmark's goroutines, closed at
// the end.
func benchClients(b *testing.B, n int, tweak ...func(*redis.Options)) []*redis.Client {
	addr, pw := realStandaloneB(b)
	clients := make([]*redis.Client, n)
	for i := range clients {
		clients[i] = goredisClient(b, addr, pw, append([]func(*redis.Options){func(o *redis.Options) { o.PoolSize = benchGoroutines + 8 }}, tweak...)...)
	}
	return clients
}

// pair is one acquire+release of key.
type pair func(ctx context.Context, key string) error

// rawPair does the wire work on the go-redis client: SET NX PX, then
// EVALSHA compare-and-delete.
func rawPair(b testing.TB, client *redis.Client) pair {
	if err := client.ScriptLoad(context.Background(), conn.ReleaseScript).Err(); err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context, key string) error {
		token := lease.NewToken().String()
		if ok, err := client.SetNX(ctx, key, token, 30*time.Second).Result(); err != nil || !ok {
			return fmt.Errorf("raw SET NX = %v, %v", ok, err)
		}
		if n, err := client.EvalSha(ctx, conn.ReleaseScriptSHA, []string{key}, token).Int64(); err != nil || n != 1 {
			return fmt.Errorf("raw release = %v, %v", n, err)
		}
		return nil
	}
}

// locksPair is lease.TryAcquire + Lock.Release on the adapter.
func locksPair(b testing.TB, client *redis.Client) pair {
	locks, err := New(client)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(locks.Close)
	return func(ctx context.Context, key string) error {
		attempt, err := locks.TryAcquire(ctx, key, 30*time.Second)
		if err != nil || !attempt.Acquired() {
			return fmt.Errorf("TryAcquire = %v, %v", attempt.Acquired(), err)
		}
		if out, err := attempt.Lock().Release(ctx); err != nil || out != lease.Released {
			return fmt.Errorf("Release = %v, %v", out, err)
		}
		return nil
	}
}

type implementation struct {
	name string
	run  pair
}

// implementations are raw go-redis and the adapter, each on a client of
// its own, and a third client for the server's statistics.
func implementations(b *testing.B, tweak ...func(*redis.Options)) ([]implementation, *redis.Client) {
	c := benchClients(b, 3, tweak...)
	return []implementation{{"raw-go-redis", rawPair(b, c[0])}, {"goredis", locksPair(b, c[1])}}, c[2]
}

// readsProcessed is the server's total_reads_processed (INFO stats).
func readsProcessed(b *testing.B, client *redis.Client) int64 {
	info, err := client.Info(context.Background(), "stats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_reads_processed:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("INFO stats has no total_reads_processed")
	return 0
}

// BenchmarkPairs64 runs pairs from 64 goroutines on distinct keys, raw
// go-redis (its pool) and the adapter's Locks interleaved in rounds, and
// reports each one's pairs/s, the server's socket reads per pair, and
// goredis/raw.
func BenchmarkPairs64(b *testing.B) {
	const round = 250 * time.Millisecond
	impls, stats := implementations(b)
	for _, impl := range impls { // warm up: connections, sessions, scripts
		if _, _, err := runRound(impl.name, impl.run, benchGoroutines, round); err != nil {
			b.Fatal(err)
		}
	}
	done, reads, spent := make([]int64, len(impls)), make([]int64, len(impls)), make([]time.Duration, len(impls))
	for range b.N {
		for i, impl := range impls {
			before := readsProcessed(b, stats)
			n, d, err := runRound(impl.name, impl.run, benchGoroutines, round)
			if err != nil {
				b.Fatal(err)
			}
			done[i], spent[i], reads[i] = done[i]+n, spent[i]+d, reads[i]+readsProcessed(b, stats)-before
		}
	}
	rates := make([]float64, len(impls))
	for i, impl := range impls {
		rates[i] = float64(done[i]) / spent[i].Seconds()
		b.ReportMetric(rates[i], impl.name+"-pairs/s")
		b.ReportMetric(float64(reads[i])/float64(done[i]), impl.name+"-server-reads/pair")
	}
	b.ReportMetric(rates[1]/rates[0], "goredis/raw")
}

// runRound runs pairs from workers goroutines for about d.
func runRound(name string, run pair, workers int, d time.Duration) (int64, time.Duration, error) {
	var pairs atomic.Int64
	var failure atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range workers {
		wg.Go(func() {
			key := "bench:pairs64:" + name + ":" + strconv.Itoa(w)
			for time.Now().Before(deadline) {
				if err := run(context.Background(), key); err != nil {
					failure.Store(err)
					return
				}
				pairs.Add(1)
			}
		})
	}
	wg.Wait()
	if err, _ := failure.Load().(error); err != nil {
		return 0, 0, err
	}
	return pairs.Load(), time.Since(start), nil
}

// BenchmarkPairSerial runs pairs from one goroutine, raw and the adapter
// alternating pair by pair, under context.Background() (background) and
// a request's cancellable context with a deadline (request), and reports
// each one's median latency (p50), goredis/raw of the medians and the
// allocations per pair; the target is p50 <= 1.0 x raw go-redis. The
// clients have go-redis' default options, or (short-io) ReadTimeout and
// WriteTimeout 400 ms, under which go-redis ends a round trip within a
// second by itself and the adapter sends it on the caller's goroutine.
func BenchmarkPairSerial(b *testing.B) {
	shortIO := func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = 400*time.Millisecond, 400*time.Millisecond }
	for _, name := range []string{"background", "request", "background-short-io", "request-short-io"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			if strings.HasPrefix(name, "request") {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Hour)
				defer cancel()
			}
			var tweak []func(*redis.Options)
			if strings.HasSuffix(name, "short-io") {
				tweak = append(tweak, shortIO)
			}
			benchmarkPairSerial(b, ctx, tweak...)
		})
	}
}

func benchmarkPairSerial(b *testing.B, ctx context.Context, tweak ...func(*redis.Options)) {
	impls, _ := implementations(b, tweak...)
	latencies := make([][]time.Duration, len(impls))
	for range max(b.N, 2000) {
		for i, impl := range impls {
			start := time.Now()
			if err := impl.run(ctx, "bench:serial:"+impl.name); err != nil {
				b.Fatal(err)
			}
			latencies[i] = append(latencies[i], time.Since(start))
		}
	}
	p50 := make([]float64, len(impls))
	for i, impl := range impls {
		slices.Sort(latencies[i])
		p50[i] = float64(latencies[i][len(latencies[i])/2].Nanoseconds()) / 1e3
		b.ReportMetric(p50[i], impl.name+"-p50-µs")
		allocs := testing.AllocsPerRun(200, func() {
			if err := impl.run(ctx, "bench:serial:"+impl.name); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(allocs, impl.name+"-allocs/pair")
	}
	b.ReportMetric(p50[1]/p50[0], "goredis/raw-p50")
}
