package leasetest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// TestKitPauseStallsTheServer_AcquireWaitsUntilResume: an Acquire sent
// while the server is paused is not run (the key stays free on the server)
// and does not return; after Resume it runs and returns the lock.
func TestKitPauseStallsTheServer_AcquireWaitsUntilResume(t *testing.T) {
	forEachProfile(t, func(t *testing.T, srv *leasetest.Server) {
		ctx := boundedCtx(t)
		locks := srv.Locks(lease.WithIdleCheck(time.Hour))        // no PING ahead of the SET
		warm := acquire(t, ctx, locks, "warm-up", 30*time.Second) // the session is open
		if err := warm.Close(); err != nil {
			t.Fatal(err)
		}
		srv.Pause()
		mark := lastSeq(srv)
		type result struct {
			lock *lease.Lock
			err  error
		}
		got := make(chan result, 1)
		go func() {
			lock, err := locks.Acquire(ctx, "report", 30*time.Second)
			got <- result{lock, err}
		}()
		if _, err := srv.Sim().WaitFor(ctx, func(e sim.Entry) bool {
			return e.Seq > mark && strings.EqualFold(e.Args[0], "SET") && e.Args[1] == "report"
		}); err != nil {
			t.Fatalf("the SET NX never reached the server: %v", err)
		}
		select {
		case r := <-got:
			t.Fatalf("Acquire returned (%v, %v) while the server was paused", r.lock, r.err)
		default:
		}
		if pttl := reply(srv, "PTTL", "report"); pttl != ":-2" {
			t.Errorf("PTTL while paused = %s, want :-2 (the SET has not run)", pttl)
		}
		srv.Resume()
		r := <-got
		if r.err != nil {
			t.Fatalf("Acquire after Resume = %v, want the lock", r.err)
		}
		defer r.lock.Close()
		if r.lock.State() != lease.StateHeld {
			t.Errorf("state %v, want Held", r.lock.State())
		}
	})
}

// TestKitPauseStallsTheServer_HolderLosesAtItsDeadline: a keep-alive
// holder whose renewal waits on a paused server gives the lock up at its
// lease's end, by its own clock (LossDeadlineInFlight, or LossDeadline),
// and a Release after Resume answers NotOwned without a delete.
func TestKitPauseStallsTheServer_HolderLosesAtItsDeadline(t *testing.T) {
	forEachProfile(t, func(t *testing.T, srv *leasetest.Server) {
		ctx := boundedCtx(t)
		const ttl = 600 * time.Millisecond
		lock := acquire(t, ctx, srv.Locks(), "report", ttl)
		srv.Pause()
		paused := time.Now()
		loss := lossOf(t, ctx, lock)
		if loss.Reason != lease.LossDeadlineInFlight && loss.Reason != lease.LossDeadline {
			t.Fatalf("loss reason %v, want %v or %v", loss.Reason, lease.LossDeadlineInFlight, lease.LossDeadline)
		}
		t.Logf("lease %v: lost (%v) %v after the pause", ttl, loss.Reason, time.Since(paused))
		srv.Resume()
		if out, err := lock.Release(context.WithoutCancel(ctx)); out != lease.NotOwned || err != nil {
			t.Errorf("Release after Resume = %v, %v; want NotOwned, nil", out, err)
		}
	})
}
