package leasesuite

import (
	"github.com/respire-go/respire/lease"
	"slices"
	"testing"
	"time"
)

// percentiles returns the p50 and p99 of samples.
func percentiles(samples []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(samples)
	slices.Sort(s)
	return s[len(s)/2], s[(len(s)*99)/100]
}

// TestPushWakesWaiters_HandOffLatency measures, 30 times, the time from
// the holder's release reply to the waiter's acquisition reply, with a
// waiter in another Locks whose retry interval is a minute; it logs p50 and
// p99 (run it against the real Redis 7.0 with scripts/with-servers.sh).
func casePushWakesWaiters_HandOffLatency(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		holderLocks, waiterLocks := tg.locks(t), tg.locks(t)
		var samples []time.Duration
		for range 30 {
			holder, err := holderLocks.Acquire(ctx, "push:lat", 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan acquired, 1)
			go func() {
				lock, err := waiterLocks.Acquire(ctx, "push:lat", 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
				got <- acquired{lock, err, time.Now()}
			}()
			eventually(t, "the waiter parked", func() bool { return parkedWaiters(waiterLocks, "push:lat") == 1 })
			if _, err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			replied := time.Now()
			r := <-got
			if r.err != nil {
				t.Fatal(r.err)
			}
			samples = append(samples, max(0, r.at.Sub(replied)))
			if _, err := r.lock.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		p50, p99 := percentiles(samples)
		t.Logf("hand-off (release reply → next acquisition reply), 30 runs: p50 %v, p99 %v", p50, p99)
	})
}

// TestPushDetectsLoss_DetectionLatency measures, 30 times, the time from a
// third party's DEL of a held key (30s lease, keep-alive) to the end of the
// holder's Context; it logs p50 and p99.
func casePushDetectsLoss_DetectionLatency(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		locks := tg.locks(t)
		var samples []time.Duration
		for range 30 {
			lock, err := locks.Acquire(ctx, "push:loss", 30*time.Second, lease.WithKeepAlive())
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "the holder's key tracked", func() bool { return holderArmed(locks, "push:loss") })
			start := time.Now()
			tg.srv.Exec("DEL", "push:loss")
			waitDone(t, lock.Context())
			samples = append(samples, time.Since(start))
			_ = lock.Close()
		}
		p50, p99 := percentiles(samples)
		t.Logf("loss detection (DEL → Context done), 30 runs: p50 %v, p99 %v", p50, p99)
	})
}

func init() {
	register(
		Case{"PushWakesWaiters_HandOffLatency", casePushWakesWaiters_HandOffLatency},
		Case{"PushDetectsLoss_DetectionLatency", casePushDetectsLoss_DetectionLatency},
	)
}
