package leasesuite

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
)

// TestPushWakesOneWaiterPerRelease_AHandOffCycleCostsAboutOneSetNX: 8
// goroutines of one Locks (retry interval a minute) take one key in turn
// as a service's workers would: each releases, waits for the next
// acquisition, then waits for the key again; a holder releases once the
// others are all parked on the tracked key. A hand-off costs about one
// SET NX, not one per waiter: the released key is handed to one waiter;
// the winner's own SET (seen by the watcher as a change) wakes nobody;
// and a goroutine that starts waiting while others of its Locks wait on
// the tracked key joins them without a SET NX the key would refuse.
func casePushWakesOneWaiterPerRelease_AHandOffCycleCostsAboutOneSetNX(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		const key, waiters, handoffs = "push:cycle", 8, 40
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()
		locks := newLocks(t, tr, clientOf([]string{tg.srv.Addr()}, "", tg.password, true))
		defer locks.Close()
		first, err := locks.Acquire(ctx, key, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu       sync.Mutex
			next     = make(chan struct{}) // closed by the next acquisition
			acquired atomic.Int64
			failed   = make(chan error, waiters)
			wg       sync.WaitGroup
		)
		for range waiters {
			wg.Go(func() {
				for ctx.Err() == nil {
					lock, err := locks.Acquire(ctx, key, 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
					if err != nil {
						if ctx.Err() == nil {
							failed <- err
						}
						return
					}
					mu.Lock()
					close(next)
					next = make(chan struct{})
					mine := next
					mu.Unlock()
					// The steady state of a busy key: the others all parked on
					// it (the one that released before came back to wait).
					for parkedWaiters(locks, key) != waiters-1 && ctx.Err() == nil {
						time.Sleep(time.Millisecond)
					}
					if _, err := lock.Release(context.Background()); err != nil {
						failed <- err
						return
					}
					if acquired.Add(1) >= handoffs {
						cancel()
					}
					select {
					case <-mine:
					case <-ctx.Done():
					}
				}
			})
		}
		eventually(t, "8 parked", func() bool { return parkedWaiters(locks, key) == waiters })
		tg.srv.ResetLog()
		if _, err := first.Release(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(failed)
		for err := range failed {
			t.Fatal(err)
		}
		n := acquired.Load()
		if n < handoffs {
			t.Logf("%+v", leaseinternal.Driver(locks).PushKey(key))
			t.Fatalf("%d hand-offs before the test's deadline; want %d (a waiter was stranded)", n, handoffs)
		}
		attempts := countSetNX(tg.srv.Log(), key)
		t.Logf("%d hand-offs, %.2f SET NX per hand-off", n, float64(attempts)/float64(n))
		if float64(attempts) > 1.5*float64(n) {
			t.Errorf("%d SET NX for %d hand-offs; want about one each (at most 1.5)", attempts, n)
		}
	})
}

func init() {
	register(
		Case{"PushWakesOneWaiterPerRelease_AHandOffCycleCostsAboutOneSetNX", casePushWakesOneWaiterPerRelease_AHandOffCycleCostsAboutOneSetNX},
	)
}
