package goredis

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

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
	tr := newTransport(b, benchClient(b))
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
