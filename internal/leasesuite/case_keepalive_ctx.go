package leasesuite

import (
	"context"
	"github.com/respire-go/respire/lease"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

// keepAliveRounds runs rounds of acquire, KeepAlive(ctx), end on one Locks
// and returns a weak pointer to each Lock; end is how each round's lock
// ends (its keep-alive is never stopped by hand).
func keepAliveRounds(t *testing.T, locks *lease.Locks, ctx context.Context, rounds int,
	end func(t *testing.T, lock *lease.Lock)) []weak.Pointer[lease.Lock] {
	t.Helper()
	gone := make([]weak.Pointer[lease.Lock], 0, rounds)
	for range rounds {
		lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if _, err := lock.KeepAlive(ctx); err != nil {
			t.Fatalf("KeepAlive: %v", err)
		}
		end(t, lock)
		if lock.State() == lease.StateHeld {
			t.Fatalf("state %v after the round's end; want not held", lock.State())
		}
		gone = append(gone, weak.Make(lock))
	}
	return gone
}

// reachable counts the weak pointers whose Lock survived two collections.
func reachable(gone []weak.Pointer[lease.Lock]) int {
	runtime.GC()
	runtime.GC()
	n := 0
	for _, p := range gone {
		if p.Value() != nil {
			n++
		}
	}
	return n
}

// TestKeepAliveReleasesItsContext_EndedLocksAreCollectable: a keep-alive
// started with Lock.KeepAlive(ctx) under one long-lived ctx, never stopped
// by hand, must not keep its Lock reachable from ctx once the keep-alive
// ended, whether by Release, Close or a loss: many rounds later, (almost)
// every Lock is collectable (a weak pointer, no finalizer). The ctx stays
// alive for the whole test, as a server's base context would.
func caseKeepAliveReleasesItsContext_EndedLocksAreCollectable(t *testing.T, tr Transport) {
	const rounds = 300
	var srv *sim.Server // the current subtest's
	ends := map[string]func(t *testing.T, lock *lease.Lock){
		"release": func(t *testing.T, lock *lease.Lock) {
			if out, err := lock.Release(ctxT(t)); out != lease.Released || err != nil {
				t.Fatalf("Release = %v, %v", out, err)
			}
		},
		"close": func(t *testing.T, lock *lease.Lock) {
			if err := lock.Close(); err != nil {
				t.Fatalf("Close = %v", err)
			}
		},
		"loss": func(t *testing.T, lock *lease.Lock) {
			if got := srv.Exec("DEL", coreOf(lock).WireKey()); got != ":1\r\n" {
				t.Fatalf("DEL = %q", got)
			}
			if ok, err := lock.ResetExpiry(ctxT(t), 10*time.Second); ok || err != nil {
				t.Fatalf("ResetExpiry of a deleted key = %v, %v; want false (lost)", ok, err)
			}
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			var locks *lease.Locks
			srv, locks = managedSim(t, tr, sim.Redis84, lease.WithoutPush())
			useClock(locks, &actor.ManualClock{}) // no renewal is ever due
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			gone := keepAliveRounds(t, locks, ctx, rounds, end)
			n := reachable(gone)
			t.Logf("%d of %d locks still reachable after their keep-alive ended by %s", n, rounds, name)
			if n > rounds/10 {
				t.Fatalf("%d of %d locks whose keep-alive ended by %s are still reachable from the keep-alive's ctx", n, rounds, name)
			}
			if ctx.Err() != nil {
				t.Fatal("the long-lived ctx ended")
			}
		})
	}
}

func init() {
	register(
		Case{"KeepAliveReleasesItsContext_EndedLocksAreCollectable", caseKeepAliveReleasesItsContext_EndedLocksAreCollectable},
	)
}
