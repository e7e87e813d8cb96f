package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

// acquireWithClock returns a lock of ttl on a Redis 8.4 sim, with the managed
// runtime on a manual clock.
func acquireWithClock(t *testing.T, tr Transport, ttl time.Duration, opts ...lease.AcquireOption) (*sim.Server, *actor.ManualClock, *lease.Lock) {
	t.Helper()
	srv, locks := managedSim(t, tr, sim.Redis84)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	lock, err := locks.Acquire(ctxT(t), "k", ttl, opts...)
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	t.Cleanup(func() { _ = lock.Close() })
	// A keep-alive holder's first push read (it tracks the key) is sent in
	// the background: let it end, so that a test's log starts after it (on
	// a loaded machine it came after the log was reset).
	leaseinternal.Driver(locks).WaitIdle()
	return srv, clock, lock
}

func caseKeepAliveRenewsAtHalfTheLeaseWithTheLatestDuration(t *testing.T, tr Transport) {
	srv, clock, lock := acquireWithClock(t, tr, 10*time.Second, lease.WithKeepAlive())
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

func caseAcquisitionContextDoesNotControlTheOwnedKeepAlive(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	ctx, cancel := context.WithCancel(ctxT(t))
	lock, err := locks.Acquire(ctx, "k", time.Minute, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := lock.Context().Err(); err != nil {
		t.Fatalf("keep-alive cancelled with the acquisition ctx: %v", err)
	}
	if _, err := lock.KeepAlive(ctxT(t)); !errors.Is(err, lease.ErrKeepAliveActive) {
		t.Fatalf("second KeepAlive = %v; want ErrKeepAliveActive", err)
	}
	if err := lock.Close(); err != nil {
		t.Fatal(err)
	}
	if cause := ownedKeepAliveErr(lock); !errors.Is(cause, lease.ErrKeepAliveStopped) {
		t.Fatalf("after Close the keep-alive cause is %v; want ErrKeepAliveStopped (stopped before the release)", cause)
	}
	if cause := context.Cause(lock.Context()); !errors.Is(cause, lease.ErrReleased) {
		t.Fatalf("after Close the lock's context cause is %v; want ErrReleased", cause)
	}
	if got := srv.Exec("EXISTS", "k"); got != ":0\r\n" {
		t.Fatalf("Close did not release: EXISTS = %q", got)
	}
}

func caseKeepAliveIsCancelledAtTheLeaseDeadlineThenTheSessionIsFenced(t *testing.T, tr Transport) {
	srv, clock, lock := acquireWithClock(t, tr, 10*time.Second, lease.WithKeepAlive())
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
	if cause := context.Cause(ka); !errors.Is(cause, lease.ErrOwnershipLost) {
		t.Fatalf("cause = %v; want ErrOwnershipLost", cause)
	}
	kill := waitLog(t, srv, isKill)
	if kill.Seq < renewal.Seq || kill.ClientID == renewal.ClientID {
		t.Fatalf("fence %v (seq %d, client %d) must follow the renewal (seq %d) from another connection (%d)",
			kill.Args, kill.Seq, kill.ClientID, renewal.Seq, renewal.ClientID)
	}
	eventually(t, "Lost", func() bool { return lock.State() == lease.StateLost })
	// A holders' read of the push hub (after the fence dropped the watcher's
	// tracking) may still be on the wire, its bound armed on the clock; it
	// ends by itself, and then nothing may be left armed.
	eventually(t, "no timer armed on a lost lock", func() bool { return clock.Pending() == 0 })
	if out, err := lock.Release(ctxT(t)); out != lease.NotOwned || err != nil {
		t.Fatalf("Release after loss = %v, %v; want NotOwned", out, err)
	}
}

func caseKeepAliveCausesAreDistinct(t *testing.T, tr Transport) {
	t.Run("renewal false is ownership lost", func(t *testing.T) {
		srv, clock, lock := acquireWithClock(t, tr, 10*time.Second, lease.WithKeepAlive())
		srv.Exec("SET", "k", "someone-else")
		clock.Advance(5 * time.Second)
		waitDone(t, lock.Context())
		cause := context.Cause(lock.Context())
		var failure *lease.RenewalFailureError
		if !errors.Is(cause, lease.ErrOwnershipLost) || errors.As(cause, &failure) {
			t.Fatalf("cause = %v; want plain ErrOwnershipLost", cause)
		}
	})
	t.Run("renewal error is a renewal failure", func(t *testing.T) {
		srv, clock, lock := acquireWithClock(t, tr, 10*time.Second, lease.WithKeepAlive())
		srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Match: hasIFEQ, Error: "ERR arbitrary server failure"})
		clock.Advance(5 * time.Second)
		waitDone(t, lock.Context())
		var failure *lease.RenewalFailureError
		cause := context.Cause(lock.Context())
		if !errors.As(cause, &failure) || !errors.Is(cause, lease.ErrOwnershipLost) || failure.Unwrap() == nil {
			t.Fatalf("cause = %v; want *RenewalFailureError wrapping the server error", cause)
		}
		if lock.State() != lease.StateLost {
			t.Fatalf("state %v; want Lost", lock.State())
		}
	})
	t.Run("release", func(t *testing.T) {
		_, _, lock := acquireWithClock(t, tr, 10*time.Second)
		ka, err := lock.KeepAlive(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := lock.Release(ctxT(t)); out != lease.Released || err != nil {
			t.Fatalf("Release = %v, %v", out, err)
		}
		if !errors.Is(ka.Err(), lease.ErrReleased) || ka.OwnershipLost() {
			t.Fatalf("after release: Err %v, OwnershipLost %v; want ErrReleased, false", ka.Err(), ka.OwnershipLost())
		}
	})
	t.Run("stop", func(t *testing.T) {
		_, _, lock := acquireWithClock(t, tr, 10*time.Second)
		ka, err := lock.KeepAlive(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if ka.Err() != nil {
			t.Fatalf("running keep-alive has Err %v", ka.Err())
		}
		ka.Stop()
		ka.Stop()
		if !errors.Is(ka.Err(), lease.ErrKeepAliveStopped) || ka.OwnershipLost() || lock.State() != lease.StateHeld {
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

func caseKeepAliveStopWaitsForTheRenewalInFlightAndDoesNotRelease(t *testing.T, tr Transport) {
	srv, clock, lock := acquireWithClock(t, tr, 10*time.Second)
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
	if lock.State() != lease.StateHeld || lock.RemainingEstimate() != estimateOf(10*time.Second) {
		t.Fatalf("after Stop: state %v, remaining %v; want Held with the renewal applied", lock.State(), lock.RemainingEstimate())
	}
	if got := srv.Exec("EXISTS", "k"); got != ":1\r\n" {
		t.Fatalf("Stop released the lock: EXISTS = %q", got)
	}
}

func caseKeepAliveStopsWhenItsContextEnds(t *testing.T, tr Transport) {
	_, _, lock := acquireWithClock(t, tr, 10*time.Second)
	ctx, cancel := context.WithCancel(ctxT(t))
	ka, err := lock.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitDone(t, ka.Context())
	if !errors.Is(ka.Err(), lease.ErrKeepAliveStopped) {
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

func caseCloseStopsTheKeepAliveFirstThenReleases(t *testing.T, tr Transport) {
	srv, clock, lock := acquireWithClock(t, tr, 10*time.Second, lease.WithKeepAlive())
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Match: hasIFEQ, Gate: gate})
	clock.Advance(5 * time.Second)
	renewal := waitLog(t, srv, isRenewal("k"))
	closed := make(chan error, 1)
	go func() { closed <- lock.Close() }()
	eventually(t, "closer parked", func() bool { return coreOf(lock).Waiters() == 1 })
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
	if cause := ownedKeepAliveErr(lock); !errors.Is(cause, lease.ErrKeepAliveStopped) {
		t.Fatalf("keep-alive cause %v; want ErrKeepAliveStopped", cause)
	}
	coreOf(lock).Driver().WaitIdle() // the push reads the release started are bounded on the clock too
	if lock.State() != lease.StateReleased || clock.Pending() != 0 {
		t.Fatalf("state %v, %d timers armed; want Released, 0", lock.State(), clock.Pending())
	}
}

// killSession kills, on the server, the session the lock's renewals use,
// and lowers conn's idle threshold for the rest of the test so that the
// next command on it is preceded by the PING that finds it dead.
func killSession(t *testing.T, srv *sim.Server, lock *lease.Lock) {
	t.Helper()
	s := coreOf(lock).Driver().StandaloneSession()
	id, ok := s.Identity()
	if !ok || !srv.KillClient(id.ID) {
		t.Fatalf("cannot kill the session (identity %v)", ok)
	}
	idleChecked(t, coreOf(lock).Driver().Transport()).SetIdleCheck(0)
}

func caseKeepAliveRenewsOnAFreshSessionAfterTheIdleOneWasKilled(t *testing.T, tr Transport) {
	srv, clock, lock := acquireWithClock(t, tr, 10*time.Second, lease.WithKeepAlive())
	killSession(t, srv, lock)
	clock.Advance(5 * time.Second)
	eventually(t, "renewal confirmed", func() bool { return renewedFresh(lock) })
	if err := lock.Context().Err(); err != nil {
		t.Fatalf("keep-alive ended: %v", context.Cause(lock.Context()))
	}
}

func caseKeepAliveOnANewSessionWithoutKillPermissionFailsWithThePermissionError(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	full := []string{"set", "get", "delex", "client|id", "client|info", "client|kill"}
	srv.SetUser("locker", "lockerpw", full...)
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "locker", "lockerpw", true))
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	srv.SetUser("locker", "lockerpw", full[:5]...) // CLIENT KILL revoked
	killSession(t, srv, lock)
	clock.Advance(5 * time.Second)
	waitDone(t, lock.Context())
	var permErr *lease.PermissionError
	cause := context.Cause(lock.Context())
	if !errors.As(cause, &permErr) || permErr.Command != "CLIENT KILL" || !errors.Is(cause, lease.ErrOwnershipLost) {
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
func caseKeepAliveRenewalLostWithItsConnectionIsFencedAndTheLockRecovers(t *testing.T, tr Transport) {
	srv, clock, lock := acquireWithClock(t, tr, 10*time.Second, lease.WithKeepAlive())
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
		return lock.State() == lease.StateHeld && renewedFresh(lock)
	})
	if err := lock.Context().Err(); err != nil {
		t.Fatalf("keep-alive ended during the recovery: %v", context.Cause(lock.Context()))
	}
}

func caseKeepAliveOnALockNoLongerHeldIsRefused(t *testing.T, tr Transport) {
	_, _, lock := acquireWithClock(t, tr, 10*time.Second)
	if _, err := lock.Release(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if ka, err := lock.KeepAlive(ctxT(t)); !errors.Is(err, lease.ErrNotHeld) || ka != nil {
		t.Fatalf("KeepAlive after release = %v, %v; want ErrNotHeld", ka, err)
	}
}

func caseReleaseStillInFlightAtTheLeaseDeadlineLosesTheLock(t *testing.T, tr Transport) {
	srv, clock, lock := acquireWithClock(t, tr, 10*time.Second, lease.WithKeepAlive())
	gate := make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "DELEX", Gate: gate})
	result := make(chan error, 1)
	go func() { _, err := lock.Release(ctxT(t)); result <- err }()
	del := waitLog(t, srv, isCommand("DELEX"))
	clock.Advance(10 * time.Second)
	waitDone(t, lock.Context())
	if !errors.Is(context.Cause(lock.Context()), lease.ErrOwnershipLost) {
		t.Fatalf("cause %v; want ErrOwnershipLost", context.Cause(lock.Context()))
	}
	if err := <-result; err == nil {
		t.Fatal("Release succeeded although its delete was cut off by the fence")
	}
	if kill := seqOf(srv.Log(), isKill); kill < del.Seq {
		t.Fatalf("fence (seq %d) must follow the DELEX (seq %d)", kill, del.Seq)
	}
	eventually(t, "Lost once the fence answered", func() bool { return lock.State() == lease.StateLost })
}

// ownedKeepAliveErr is what the cause of l's WithKeepAlive keep-alive
// would be (nil while it runs).
func ownedKeepAliveErr(l *lease.Lock) error { return coreOf(l).OwnedKeepAliveErr() }

// TestOwnedKeepAlive_DoesNotKeepTheAcquisitionContextAlive: the keep-alive
// WithKeepAlive starts belongs to the lock, not to the acquisition's ctx,
// so it must not keep that ctx (a request's context: its timer, its values)
// reachable while the lock is held.
func caseOwnedKeepAlive_DoesNotKeepTheAcquisitionContextAlive(t *testing.T, tr Transport) {
	_, locks := managedSim(t, tr, sim.Redis84)
	useClock(locks, &actor.ManualClock{})
	type requestValue struct{ _ [64]byte }
	type valueKey struct{}
	value := &requestValue{}
	gone := weak.Make(value)
	ctx, cancel := context.WithTimeout(context.WithValue(ctxT(t), valueKey{}, value), time.Minute)
	lock, err := locks.Acquire(ctx, "k", 10*time.Second, lease.WithKeepAlive())
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Close() })
	ctx, value = nil, nil // drop the test's own references
	_, _ = ctx, value
	// The driver's work the acquisition started on its own tasks (its first
	// push read) ends by itself: wait for it, so that what is judged is
	// what the held lock keeps, not a task still running.
	leaseinternal.Driver(locks).WaitIdle()
	// The engine's task that answered the acquisition may still be ending
	// (its frame holds the ctx until it returns): what the held lock keeps
	// is what stays reachable once nothing runs, so collect until the value
	// is gone, and fail only if it never goes while the lock is held.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		runtime.GC()
		runtime.GC()
		if gone.Value() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a value of the acquisition's ctx is still reachable while the lock is held")
		}
	}
	if lock.State() != lease.StateHeld {
		t.Fatalf("state %v; want held", lock.State())
	}
}

func init() {
	register(
		Case{"KeepAliveRenewsAtHalfTheLeaseWithTheLatestDuration", caseKeepAliveRenewsAtHalfTheLeaseWithTheLatestDuration},
		Case{"AcquisitionContextDoesNotControlTheOwnedKeepAlive", caseAcquisitionContextDoesNotControlTheOwnedKeepAlive},
		Case{"KeepAliveIsCancelledAtTheLeaseDeadlineThenTheSessionIsFenced", caseKeepAliveIsCancelledAtTheLeaseDeadlineThenTheSessionIsFenced},
		Case{"KeepAliveCausesAreDistinct", caseKeepAliveCausesAreDistinct},
		Case{"KeepAliveStopWaitsForTheRenewalInFlightAndDoesNotRelease", caseKeepAliveStopWaitsForTheRenewalInFlightAndDoesNotRelease},
		Case{"KeepAliveStopsWhenItsContextEnds", caseKeepAliveStopsWhenItsContextEnds},
		Case{"CloseStopsTheKeepAliveFirstThenReleases", caseCloseStopsTheKeepAliveFirstThenReleases},
		Case{"KeepAliveRenewsOnAFreshSessionAfterTheIdleOneWasKilled", caseKeepAliveRenewsOnAFreshSessionAfterTheIdleOneWasKilled},
		Case{"KeepAliveOnANewSessionWithoutKillPermissionFailsWithThePermissionError", caseKeepAliveOnANewSessionWithoutKillPermissionFailsWithThePermissionError},
		Case{"KeepAliveRenewalLostWithItsConnectionIsFencedAndTheLockRecovers", caseKeepAliveRenewalLostWithItsConnectionIsFencedAndTheLockRecovers},
		Case{"KeepAliveOnALockNoLongerHeldIsRefused", caseKeepAliveOnALockNoLongerHeldIsRefused},
		Case{"ReleaseStillInFlightAtTheLeaseDeadlineLosesTheLock", caseReleaseStillInFlightAtTheLeaseDeadlineLosesTheLock},
		Case{"OwnedKeepAlive_DoesNotKeepTheAcquisitionContextAlive", caseOwnedKeepAlive_DoesNotKeepTheAcquisitionContextAlive},
	)
}
