package leasesuite

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// fairQueue starts n fair waiters on key of locks, one after the other,
// each started once the one before it reported its position (so the
// tickets are drawn in start order), and returns the channel each sends
// its index on once it holds the lock; it holds it for hold, then
// releases. The waiters end with ctx; the test's cleanup waits for them.
func fairQueue(t *testing.T, ctx context.Context, locks *lease.Locks, key string, n int, hold time.Duration,
	opts ...lease.AcquireOption) <-chan int {
	t.Helper()
	order := make(chan int, n)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for i := range n {
		placed := make(chan int, 16)
		o := append([]lease.AcquireOption{lease.WithFairWait(), lease.WithWaitUntilDone(),
			lease.WithQueuePosition(func(p int) {
				select {
				case placed <- p:
				default:
				}
			})}, opts...)
		wg.Go(func() {
			lock, err := locks.Acquire(ctx, key, time.Minute, o...)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("waiter %d: %v", i, err)
				}
				return
			}
			order <- i
			time.Sleep(hold)
			if _, err := lock.Release(context.Background()); err != nil {
				t.Errorf("waiter %d's release: %v", i, err)
			}
		})
		select {
		case p := <-placed:
			if p != i+1 {
				t.Fatalf("waiter %d queued at %d; want %d", i, p, i+1)
			}
		case <-ctx.Done():
			t.Fatalf("waiter %d was never placed", i)
		}
	}
	return order
}

// fairTries counts the fair tries (EVALSHA or EVAL of the mutex's fair try
// script) in log.
func fairTries(log []sim.Entry) int {
	n := 0
	sha := conn.ScriptSHA(conn.FairMutexTryScript)
	for _, e := range log {
		if len(e.Args) > 1 && (e.Args[1] == sha || e.Args[1] == conn.FairMutexTryScript) {
			n++
		}
	}
	return n
}

// TestFairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued: 16 fair
// waiters of one Locks queued behind a holder, one after the other (each
// told its position: 1 to 16), take the lock in exactly that order after
// the holder's release, one at a time; on the sim every waiter tried at
// most three times in all (its first try, the claim, and at most one
// spare), not once per hand-off — push woke the head, never the herd
// (rule FairPushWakesOnlyTheHead).
func caseFairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		const n = 16
		locks := tg.locks(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		holder, err := locks.Acquire(ctx, "fifo", time.Minute, lease.WithFairWait())
		if err != nil {
			t.Fatal(err)
		}
		before := fairTries(tg.srv.Log())
		order := fairQueue(t, ctx, locks, "fifo", n, time.Millisecond)
		if _, err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		for want := range n {
			select {
			case got := <-order:
				if got != want {
					t.Fatalf("hand-off %d went to waiter %d; want %d (ticket order)", want+1, got, want)
				}
			case <-ctx.Done():
				t.Fatalf("hand-off %d never came", want+1)
			}
		}
		tries := fairTries(tg.srv.Log()) - before
		t.Logf("%d fair tries for %d waiters", tries, n)
		if !tg.real && tries > 3*n {
			t.Fatalf("%d fair tries for %d waiters; want at most %d (push wakes the head, not the herd)", tries, n, 3*n)
		}
		eventually(t, "the queue emptied", func() bool {
			w, err := locks.Waiters(ctx, "fifo")
			return err == nil && w == 0
		})
	})
}

func init() {
	register(Case{"FairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued", caseFairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued})
}
