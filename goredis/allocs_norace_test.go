//go:build !race

package goredis

import (
	"context"
	"testing"
	"time"
)

// TestAdapterAllocatesLikeItsClient_APairAllocatesNoMoreThanRawGoRedisPlusTwo:
// TryAcquire + Release through the adapter allocates at most two more
// objects than the same commands (SET NX PX, EVALSHA) sent by hand on
// go-redis, under a context without a deadline and under one with a
// deadline (the race detector's instrumentation allocates: this file is
// built without it; `make allocs` runs it).
func TestAdapterAllocatesLikeItsClient_APairAllocatesNoMoreThanRawGoRedisPlusTwo(t *testing.T) {
	srv, _, rawClient := private(t, false)
	raw := rawPair(t, rawClient)
	adapter := locksPair(t, goredisClient(t, srv.Addr, srv.Password))
	deadlined, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), deadlined} {
		_, hasDeadline := ctx.Deadline()
		rawAllocs := leastAllocs(t, raw, ctx, "allocs:raw")
		adapterAllocs := leastAllocs(t, adapter, ctx, "allocs:adapter")
		if adapterAllocs > rawAllocs+2 {
			t.Errorf("ctx with deadline %v: a pair allocates %.1f objects through the adapter, %.1f on raw go-redis; want at most raw + 2",
				hasDeadline, adapterAllocs, rawAllocs)
		}
	}
}

// leastAllocs is the least of three testing.AllocsPerRun measurements of
// run on key (a goroutine of go-redis' or the runtime's may allocate
// during one of them), after a warm-up.
func leastAllocs(t *testing.T, run pair, ctx context.Context, key string) float64 {
	t.Helper()
	f := func() {
		if err := run(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	for range 50 {
		f()
	}
	least := testing.AllocsPerRun(200, f)
	for range 2 {
		least = min(least, testing.AllocsPerRun(200, f))
	}
	return least
}
