package goredis

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// The session's Do against raw go-redis doing the same commands (SET NX
// PX, then the compare-and-delete script) from 64 goroutines on the real
// Redis 7.0: run with
//
//	bash scripts/with-servers.sh env -C goredis go test -run '^$' -bench . -benchmem
//
// One op is one acquire + release pair.

const benchGoroutines = 64

func benchClient(b *testing.B) *redis.Client {
	addr, pw := realStandaloneB(b)
	return goredisClient(b, addr, pw, func(o *redis.Options) { o.PoolSize = benchGoroutines })
}

func BenchmarkPairTransport(b *testing.B) {
	tr := newEngine(b, benchClient(b))
	var n atomic.Int64
	b.SetParallelism((benchGoroutines + 1) / 2)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		k := "bench:t:" + strconv.FormatInt(n.Add(1), 10)
		for pb.Next() {
			if _, err := tr.Do(ctx, conn.AcquireOp(k, "tok", 10000), nil); err != nil {
				b.Error(err)
				return
			}
			if _, err := tr.Do(ctx, conn.ReleaseOp(k, "tok"), nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkPairRawGoRedis(b *testing.B) {
	c := benchClient(b)
	var n atomic.Int64
	script := redis.NewScript(conn.ReleaseScript)
	b.SetParallelism((benchGoroutines + 1) / 2)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		k := "bench:r:" + strconv.FormatInt(n.Add(1), 10)
		for pb.Next() {
			if err := c.SetNX(ctx, k, "tok", 10_000_000_000).Err(); err != nil {
				b.Error(err)
				return
			}
			if err := script.Run(ctx, c, []string{k}, "tok").Err(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPairLocks is one goroutine's TryAcquire + Release through
// lease on the go-redis transport (what peerbench's uncontended scenario
// times), each call under context.Background() (background) or a
// context.WithTimeout of its own (request).
func BenchmarkPairLocks(b *testing.B) {
	addr, pw := realStandaloneB(b)
	locks, err := New(goredisClient(b, addr, pw))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(locks.Close)
	for _, request := range []bool{false, true} {
		name := "background"
		if request {
			name = "request"
		}
		b.Run(name, func(b *testing.B) {
			call := func() (context.Context, context.CancelFunc) {
				if request {
					return context.WithTimeout(context.Background(), 5*time.Second)
				}
				return context.Background(), func() {}
			}
			b.ReportAllocs()
			for b.Loop() {
				ctx, cancel := call()
				a, err := locks.TryAcquire(ctx, "bench:l", 10*time.Second)
				cancel()
				if err != nil || !a.Acquired() {
					b.Fatal(a.Acquired(), err)
				}
				ctx, cancel = call()
				_, err = a.Lock().Release(ctx)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
