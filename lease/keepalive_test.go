package lease

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

// acquireWithClock returns a lock of ttl on a Redis 8.4 sim, with the managed
// runtime on a manual clock.
func acquireWithClock(t *testing.T, ttl time.Duration, opts ...AcquireOption) (*sim.Server, *actor.ManualClock, *Lock) {
	t.Helper()
	srv, locks := managedSim(t, sim.Redis84)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	lock, err := locks.Acquire(ctxT(t), "k", ttl, opts...)
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	t.Cleanup(func() { _ = lock.Close() })
	return srv, clock, lock
}

func TestKeepAliveRenewsAtHalfTheLeaseWithTheLatestDuration(t *testing.T) {
	srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
	srv.ResetLog()
	half := estimateOf(10*time.Second) - 5*time.Second // half the lease before the estimate runs out
	clock.Advance(half - time.Millisecond)
	if n := count(srv.Log(), "SET"); n != 0 {
		t.Fatalf("renewed before half the lease: %v", srv.Log())
	}
	clock.Advance(time.Millisecond)
	e := waitLog(t, srv, isRenewal("k"))
	if e.Args[len(e.Args)-1] != "10000" {
		t.Fatalf("renewal %q; want PX 10000", e.Args)
	}
	eventually(t, "renewal confirmed", func() bool { return renewedFresh(lock) })
	if ctx := lock.Context(); ctx.Err() != nil {
		t.Fatalf("keep-alive ended: %v", context.Cause(ctx))
	}
}

func TestAcquisitionContextDoesNotControlTheOwnedKeepAlive(t *testing.T) {
	srv, locks := managedSim(t, sim.Redis84)
	ctx, cancel := context.WithCancel(ctxT(t))
	lock, err := locks.Acquire(ctx, "k", time.Minute, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := lock.Context().Err(); err != nil {
		t.Fatalf("keep-alive cancelled with the acquisition ctx: %v", err)
	}
	if _, err := lock.KeepAlive(ctxT(t)); !errors.Is(err, ErrKeepAliveActive) {
		t.Fatalf("second KeepAlive = %v; want ErrKeepAliveActive", err)
	}
	if err := lock.Close(); err != nil {
		t.Fatal(err)
	}
	if cause := ownedKeepAliveErr(lock); !errors.Is(cause, ErrKeepAliveStopped) {
		t.Fatalf("after Close the keep-alive cause is %v; want ErrKeepAliveStopped (stopped before the release)", cause)
	}
	if cause := context.Cause(lock.Context()); !errors.Is(cause, ErrReleased) {
		t.Fatalf("after Close the lock's context cause is %v; want ErrReleased", cause)
	}
	if got := srv.Exec("EXISTS", "k"); got != ":0\r\n" {
		t.Fatalf("Close did not release: EXISTS = %q", got)
	}
}

func TestKeepAliveIsCancelledAtTheLeaseDeadlineThenTheSessionIsFenced(t *testing.T) {
	srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
	gate := make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Match: hasIFEQ, Gate: gate})
	clock.Advance(5 * time.Second)
	renewal := waitLog(t, srv, isRenewal("k"))
	ka := lock.Context()
	clock.Advance(estimateOf(10*time.Second) - 5*time.Second - time.Millisecond)
	if ka.Err() != nil {
		t.Fatalf("keep-alive cancelled before the deadline: %v", context.Cause(ka))
	}
	clock.Advance(time.Millisecond) // acquisition send time + Duration − drift margin: the server's lease cannot end earlier
	waitDone(t, ka)
	if cause := context.Cause(ka); !errors.Is(cause, ErrOwnershipLost) {
		t.Fatalf("cause = %v; want ErrOwnershipLost", cause)
	}
	kill := waitLog(t, srv, isKill)
	if kill.Seq < renewal.Seq || kill.ClientID == renewal.ClientID {
		t.Fatalf("fence %v (seq %d, client %d) must follow the renewal (seq %d) from another connection (%d)",
			kill.Args, kill.Seq, kill.ClientID, renewal.Seq, renewal.ClientID)
	}
	eventually(t, "Lost", func() bool { return lock.State() == StateLost })
	// A holders' read of the push hub (after the fence dropped the watcher's
	// tracking) may still be on the wire, its bound armed on the clock; it
	// ends by itself, and then nothing may be left armed.
	eventually(t, "no timer armed on a lost lock", func() bool { return clock.Pending() == 0 })
	if out, err := lock.Release(ctxT(t)); out != NotOwned || err != nil {
		t.Fatalf("Release after loss = %v, %v; want NotOwned", out, err)
	}
}

func TestKeepAliveCausesAreDistinct(t *testing.T) {
	t.Run("renewal false is ownership lost", func(t *testing.T) {
		srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
		srv.Exec("SET", "k", "someone-else")
		clock.Advance(5 * time.Second)
		waitDone(t, lock.Context())
		cause := context.Cause(lock.Context())
		var failure *RenewalFailureError
		if !errors.Is(cause, ErrOwnershipLost) || errors.As(cause, &failure) {
			t.Fatalf("cause = %v; want plain ErrOwnershipLost", cause)
		}
	})
	t.Run("renewal error is a renewal failure", func(t *testing.T) {
		srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
		srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Match: hasIFEQ, Error: "ERR arbitrary server failure"})
		clock.Advance(5 * time.Second)
		waitDone(t, lock.Context())
		var failure *RenewalFailureError
		cause := context.Cause(lock.Context())
		if !errors.As(cause, &failure) || !errors.Is(cause, ErrOwnershipLost) || failure.Unwrap() == nil {
			t.Fatalf("cause = %v; want *RenewalFailureError wrapping the server error", cause)
		}
		if lock.State() != StateLost {
			t.Fatalf("state %v; want Lost", lock.State())
		}
	})
	t.Run("release", func(t *testing.T) {
		_, _, lock := acquireWithClock(t, 10*time.Second)
		ka, err := lock.KeepAlive(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := lock.Release(ctxT(t)); out != Released || err != nil {
			t.Fatalf("Release = %v, %v", out, err)
		}
		if !errors.Is(ka.Err(), ErrReleased) || ka.OwnershipLost() {
			t.Fatalf("after release: Err %v, OwnershipLost %v; want ErrReleased, false", ka.Err(), ka.OwnershipLost())
		}
	})
	t.Run("stop", func(t *testing.T) {
		_, _, lock := acquireWithClock(t, 10*time.Second)
		ka, err := lock.KeepAlive(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if ka.Err() != nil {
			t.Fatalf("running keep-alive has Err %v", ka.Err())
		}
		ka.Stop()
		ka.Stop()
		if !errors.Is(ka.Err(), ErrKeepAliveStopped) || ka.OwnershipLost() || lock.State() != StateHeld {
			t.Fatalf("after Stop: Err %v, lost %v, state %v", ka.Err(), ka.OwnershipLost(), lock.State())
		}
		again, err := lock.KeepAlive(ctxT(t))
		if err != nil {
			t.Fatalf("KeepAlive after Stop = %v; want a new one", err)
		}
		ka.Stop() // the old one must not stop the new one
		if again.Err() != nil {
			t.Fatalf("stopping the old keep-alive stopped the new one: %v", again.Err())
		}
	})
}

func TestKeepAliveStopWaitsForTheRenewalInFlightAndDoesNotRelease(t *testing.T) {
	srv, clock, lock := acquireWithClock(t, 10*time.Second)
	ka, err := lock.KeepAlive(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Match: hasIFEQ, Gate: gate})
	clock.Advance(sm.RenewalDelay(lock.Duration(), lock.RemainingEstimate())) // the renewal is sent when due
	waitLog(t, srv, isRenewal("k"))
	stopped := make(chan struct{})
	go func() { ka.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while the renewal was in flight")
	case <-time.After(50 * time.Millisecond): // a negative check: Stop must still be waiting
	}
	close(gate)
	<-stopped
	if lock.State() != StateHeld || lock.RemainingEstimate() != estimateOf(10*time.Second) {
		t.Fatalf("after Stop: state %v, remaining %v; want Held with the renewal applied", lock.State(), lock.RemainingEstimate())
	}
	if got := srv.Exec("EXISTS", "k"); got != ":1\r\n" {
		t.Fatalf("Stop released the lock: EXISTS = %q", got)
	}
}

func TestKeepAliveStopsWhenItsContextEnds(t *testing.T) {
	_, _, lock := acquireWithClock(t, 10*time.Second)
	ctx, cancel := context.WithCancel(ctxT(t))
	ka, err := lock.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitDone(t, ka.Context())
	if !errors.Is(ka.Err(), ErrKeepAliveStopped) {
		t.Fatalf("cause %v; want ErrKeepAliveStopped", ka.Err())
	}
	eventually(t, "slot freed", func() bool {
		k, err := lock.KeepAlive(ctxT(t))
		if err == nil {
			k.Stop()
		}
		return err == nil
	})
}

func TestCloseStopsTheKeepAliveFirstThenReleases(t *testing.T) {
	srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Match: hasIFEQ, Gate: gate})
	clock.Advance(5 * time.Second)
	renewal := waitLog(t, srv, isRenewal("k"))
	closed := make(chan error, 1)
	go func() { closed <- lock.Close() }()
	eventually(t, "closer parked", func() bool { return lock.core().Waiters() == 1 })
	if seqOf(srv.Log(), isCommand("DELEX")) != 0 {
		t.Fatal("released while the keep-alive's renewal was in flight")
	}
	close(gate)
	if err := <-closed; err != nil {
		t.Fatalf("Close = %v", err)
	}
	if del := seqOf(srv.Log(), isCommand("DELEX")); del < renewal.Seq {
		t.Fatalf("DELEX (seq %d) must follow the renewal (seq %d)", del, renewal.Seq)
	}
	if cause := ownedKeepAliveErr(lock); !errors.Is(cause, ErrKeepAliveStopped) {
		t.Fatalf("keep-alive cause %v; want ErrKeepAliveStopped", cause)
	}
	lock.core().Driver().WaitIdle() // the push reads the release started are bounded on the clock too
	if lock.State() != StateReleased || clock.Pending() != 0 {
		t.Fatalf("state %v, %d timers armed; want Released, 0", lock.State(), clock.Pending())
	}
}

// killSession kills, on the server, the session the lock's renewals use,
// and lowers conn's idle threshold for the rest of the test so that the
// next command on it is preceded by the PING that finds it dead.
func killSession(t *testing.T, srv *sim.Server, lock *Lock) {
	t.Helper()
	s := lock.core().Driver().StandaloneSession()
	id, ok := s.Identity()
	if !ok || !srv.KillClient(id.ID) {
		t.Fatalf("cannot kill the session (identity %v)", ok)
	}
	lock.core().Driver().Transport().(*conn.Pool).SetIdleCheck(0)
}

func TestKeepAliveRenewsOnAFreshSessionAfterTheIdleOneWasKilled(t *testing.T) {
	srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
	killSession(t, srv, lock)
	clock.Advance(5 * time.Second)
	eventually(t, "renewal confirmed", func() bool { return renewedFresh(lock) })
	if err := lock.Context().Err(); err != nil {
		t.Fatalf("keep-alive ended: %v", context.Cause(lock.Context()))
	}
}

func TestKeepAliveOnANewSessionWithoutKillPermissionFailsWithThePermissionError(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	full := []string{"set", "get", "delex", "client|id", "client|info", "client|kill"}
	srv.SetUser("locker", "lockerpw", full...)
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw", true))
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	srv.SetUser("locker", "lockerpw", full[:5]...) // CLIENT KILL revoked
	killSession(t, srv, lock)
	clock.Advance(5 * time.Second)
	waitDone(t, lock.Context())
	var permErr *PermissionError
	cause := context.Cause(lock.Context())
	if !errors.As(cause, &permErr) || permErr.Command != "CLIENT KILL" || !errors.Is(cause, ErrOwnershipLost) {
		t.Fatalf("cause %v; want a renewal failure wrapping the CLIENT KILL permission error", cause)
	}
	if seqOf(srv.Log(), isRenewal("k")) != 0 {
		t.Fatal("renewed on a session that could not be fenced")
	}
}

// A renewal whose connection dies after the server ran it has an unknown
// outcome. The lock is not given up while its lease deadline lasts: the
// session is fenced, then an owner-compared renewal on a fresh session
// confirms it; the keep-alive context stays live throughout.
func TestKeepAliveRenewalLostWithItsConnectionIsFencedAndTheLockRecovers(t *testing.T) {
	srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Command: "SET", Match: hasIFEQ})
	clock.Advance(5 * time.Second)
	first := waitLog(t, srv, isRenewal("k"))
	kill := waitLog(t, srv, isKill)
	second := waitLog(t, srv, func(e sim.Entry) bool { return isRenewal("k")(e) && e.Seq > kill.Seq })
	if second.ClientID == first.ClientID || kill.Seq < first.Seq {
		t.Fatalf("renewal on %d, fence at %d, recovery renewal on %d; want fence after the renewal and the recovery on a fresh session",
			first.ClientID, kill.Seq, second.ClientID)
	}
	eventually(t, "recovered", func() bool {
		return lock.State() == StateHeld && renewedFresh(lock)
	})
	if err := lock.Context().Err(); err != nil {
		t.Fatalf("keep-alive ended during the recovery: %v", context.Cause(lock.Context()))
	}
}

func TestKeepAliveOnALockNoLongerHeldIsRefused(t *testing.T) {
	_, _, lock := acquireWithClock(t, 10*time.Second)
	if _, err := lock.Release(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if ka, err := lock.KeepAlive(ctxT(t)); !errors.Is(err, ErrNotHeld) || ka != nil {
		t.Fatalf("KeepAlive after release = %v, %v; want ErrNotHeld", ka, err)
	}
}

func TestReleaseStillInFlightAtTheLeaseDeadlineLosesTheLock(t *testing.T) {
	srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
	gate := make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "DELEX", Gate: gate})
	result := make(chan error, 1)
	go func() { _, err := lock.Release(ctxT(t)); result <- err }()
	del := waitLog(t, srv, isCommand("DELEX"))
	clock.Advance(10 * time.Second)
	waitDone(t, lock.Context())
	if !errors.Is(context.Cause(lock.Context()), ErrOwnershipLost) {
		t.Fatalf("cause %v; want ErrOwnershipLost", context.Cause(lock.Context()))
	}
	if err := <-result; err == nil {
		t.Fatal("Release succeeded although its delete was cut off by the fence")
	}
	if kill := seqOf(srv.Log(), isKill); kill < del.Seq {
		t.Fatalf("fence (seq %d) must follow the DELEX (seq %d)", kill, del.Seq)
	}
	eventually(t, "Lost once the fence answered", func() bool { return lock.State() == StateLost })
}

// ownedKeepAliveErr is what the cause of l's WithKeepAlive keep-alive
// would be (nil while it runs).
func ownedKeepAliveErr(l *Lock) error { return l.core().OwnedKeepAliveErr() }

// TestOwnedKeepAlive_DoesNotKeepTheAcquisitionContextAlive: the keep-alive
// WithKeepAlive starts belongs to the lock, not to the acquisition's ctx,
// so it must not keep that ctx (a request's context: its timer, its values)
// reachable while the lock is held.
func TestOwnedKeepAlive_DoesNotKeepTheAcquisitionContextAlive(t *testing.T) {
	_, locks := managedSim(t, sim.Redis84)
	useClock(locks, &actor.ManualClock{})
	type requestValue struct{ _ [64]byte }
	type valueKey struct{}
	value := &requestValue{}
	gone := weak.Make(value)
	ctx, cancel := context.WithTimeout(context.WithValue(ctxT(t), valueKey{}, value), time.Minute)
	lock, err := locks.Acquire(ctx, "k", 10*time.Second, WithKeepAlive())
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Close() })
	ctx, value = nil, nil // drop the test's own references
	_, _ = ctx, value
	runtime.GC()
	runtime.GC()
	if gone.Value() != nil {
		t.Fatal("a value of the acquisition's ctx is still reachable while the lock is held")
	}
	if lock.State() != StateHeld {
		t.Fatalf("state %v; want held", lock.State())
	}
}
