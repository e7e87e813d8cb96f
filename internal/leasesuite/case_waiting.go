package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

// acquireTries counts the SET NX of key in log.
func acquireTries(log []sim.Entry, key string) int {
	n := 0
	for _, e := range log {
		if isAcquire(e) && e.Args[1] == key {
			n++
		}
	}
	return n
}

// TestWaitUntilDone_KeepsPollingUntilTheContextEndsAndReturnsItsCause:
// with WithWaitUntilDone, Acquire of a key another owner holds polls for
// as long as its ctx lasts, far past any WithWait budget, and then returns
// an error matching ctx's cause (context.DeadlineExceeded, or the cause
// given to the context).
func caseWaitUntilDone_KeepsPollingUntilTheContextEndsAndReturnsItsCause(t *testing.T, tr Transport) {
	t.Run("virtual time, cancelled with a cause", func(t *testing.T) {
		srv, locks, clock := contended(t, tr) //
		const every = time.Second
		cause := errors.New("test: the request was abandoned")
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		done := make(chan error, 1)
		go func() {
			lock, err := locks.Acquire(ctx, "k", time.Minute, lease.WithWaitUntilDone(), lease.WithWait(time.Millisecond), lease.WithRetryEvery(every))
			if lock != nil {
				t.Error("Acquire returned a lock of a key another owner holds")
			}
			done <- err
		}()
		const polls = 20
		for try := 1; try <= polls; try++ {
			eventually(t, "the next try", func() bool { return acquireTries(srv.Log(), "k") == try })
			eventually(t, "the polling sleep", func() bool { return clock.Pending() == 1 })
			select {
			case err := <-done:
				t.Fatalf("Acquire gave up after %d tries with its ctx live: %v", try, err)
			default:
			}
			if try < polls {
				clock.Advance(every)
			}
		}
		cancel(cause)
		err := <-done
		if !errors.Is(err, cause) || errors.Is(err, lease.ErrNotAcquired) {
			t.Fatalf("Acquire = %v; want the ctx's cause", err)
		}
		assertOneLeasePrefix(t, "Acquire", err)
	})
	t.Run("real time, deadline exceeded", func(t *testing.T) {
		srv, locks := managedSim(t, tr, sim.Redis84)
		srv.Exec("SET", "k", "other", "PX", "60000")
		const budget = 300 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		lock, err := locks.Acquire(ctx, "k", time.Minute, lease.WithWaitUntilDone(), lease.WithRetryEvery(10*time.Millisecond))
		if lock != nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire = %v, %v; want no lock and context.DeadlineExceeded", lock, err)
		}
		if ctx.Err() == nil {
			t.Fatal("Acquire returned before its ctx ended")
		}
		// How often it polls is checked on the virtual clock
		// (WaitUntilDone_AcquiresAsSoonAsTheHolderReleases); here, on a
		// machine of any load, only that it tried.
		if tries := acquireTries(srv.Log(), "k"); tries < 1 {
			t.Fatalf("%d tries in %v; want at least one", tries, budget)
		}
	})
}

// TestWaitUntilDone_AcquiresAsSoonAsTheHolderReleases: a waiter polling
// with WithWaitUntilDone takes the lock on its first try after the holder
// released it.
func caseWaitUntilDone_AcquiresAsSoonAsTheHolderReleases(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	clock := &actor.ManualClock{}
	useClock(locks, clock) // polling sleeps exactly RetryEvery
	// The holder's release would carry the waiter's try (rule
	// PushHandsOverWithinOneLocks); this is the waiter's own polling, as a
	// waiter of another process sees it.
	leaseinternal.Driver(locks).DisableHandOver()
	ctx := ctxT(t)
	holder, err := locks.Acquire(ctx, "k", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	const every = 100 * time.Millisecond
	got := make(chan *lease.Lock, 1)
	go func() {
		lock, err := locks.Acquire(ctx, "k", time.Minute, lease.WithWaitUntilDone(), lease.WithRetryEvery(every))
		if err != nil {
			t.Errorf("waiting Acquire = %v", err)
		}
		got <- lock
	}()
	for try := 1; try <= 3; try++ { // the waiter's tries while the holder holds
		eventually(t, "the waiter's next try", func() bool { return acquireTries(srv.Log(), "k") == 1+try })
		eventually(t, "the polling sleep", func() bool { return clock.Pending() == 1 })
		if try < 3 {
			clock.Advance(every)
		}
	}
	if out, err := holder.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("holder's Release = %v, %v", out, err)
	}
	clock.Advance(every) // the waiter's next try
	lock := <-got
	if lock == nil || lock.State() != lease.StateHeld {
		t.Fatalf("waiter got %v; want the lock", lock)
	}
	defer lock.Close()
	if tries := acquireTries(srv.Log(), "k"); tries != 1+4 {
		t.Fatalf("%d SET NX of k; want the holder's and 4 of the waiter's (the 4th, right after the release, acquires)", tries)
	}
}

// TestPollJitter_PollingSleepsOfALocksAreDrawnUniformly: a Locks' polling
// sleeps take their r (see statemachine.Poll.Next) from a uniform source
// over [0, 1), not a constant: waiters that start together spread out.
func casePollJitter_PollingSleepsOfALocksAreDrawnUniformly(t *testing.T, tr Transport) {
	_, locks := managedSim(t, tr, sim.Redis84)
	jitter := leaseinternal.Driver(locks).Jitter()
	const draws = 2000
	var buckets [10]int
	for range draws {
		r := jitter()
		if r < 0 || r >= 1 {
			t.Fatalf("jitter drew %v; want it in [0, 1)", r)
		}
		buckets[int(r*10)]++
	}
	for i, n := range buckets {
		if n < draws/20 {
			t.Fatalf("tenth %d of [0, 1) got %d of %d draws; want a uniform spread (%v)", i, n, draws, buckets)
		}
	}
}

func init() {
	register(
		Case{"WaitUntilDone_KeepsPollingUntilTheContextEndsAndReturnsItsCause", caseWaitUntilDone_KeepsPollingUntilTheContextEndsAndReturnsItsCause},
		Case{"WaitUntilDone_AcquiresAsSoonAsTheHolderReleases", caseWaitUntilDone_AcquiresAsSoonAsTheHolderReleases},
		Case{"PollJitter_PollingSleepsOfALocksAreDrawnUniformly", casePollJitter_PollingSleepsOfALocksAreDrawnUniformly},
	)
}
