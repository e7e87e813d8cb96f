package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/lease"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

func caseResetExpiryAppliesTheDurationFromNow(t *testing.T, tr Transport) {
	srv, clock, lock := acquireWithClock(t, tr, 10*time.Second)
	clock.Advance(3 * time.Second)
	if ok, err := lock.ResetExpiry(ctxT(t), 20*time.Second); !ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v", ok, err)
	}
	if lock.Duration() != 20*time.Second || lock.RemainingEstimate() != estimateOf(20*time.Second) {
		t.Fatalf("Duration %v, remaining %v; want 20s, 20s", lock.Duration(), lock.RemainingEstimate())
	}
	var pttl int64
	if _, err := fmtSscanInt(srv.Exec("PTTL", "k"), &pttl); err != nil || pttl <= 10000 || pttl > 20000 {
		t.Fatalf("server PTTL %d; want the new 20s lease", pttl)
	}
}

func caseResetExpiryFalseLosesTheLockAndLaterResetsSendNothing(t *testing.T, tr Transport) {
	srv, _, lock := acquireWithClock(t, tr, 10*time.Second)
	ka, err := lock.KeepAlive(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	srv.Exec("SET", "k", "someone-else")
	if ok, err := lock.ResetExpiry(ctxT(t), time.Minute); ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v; want false", ok, err)
	}
	if lock.State() != lease.StateLost || lock.Duration() != 10*time.Second || !ka.OwnershipLost() {
		t.Fatalf("state %v, duration %v, keep-alive lost %v", lock.State(), lock.Duration(), ka.OwnershipLost())
	}
	before := len(srv.Log())
	if ok, err := lock.ResetExpiry(ctxT(t), time.Minute); ok || err != nil {
		t.Fatalf("second ResetExpiry = %v, %v; want false", ok, err)
	}
	if len(srv.Log()) != before {
		t.Fatalf("a reset of a lost lock sent %v", srv.Log()[before:])
	}
}

func caseUncertainResetCancelsKeepAliveThenFencesAfterTheRenewal(t *testing.T, tr Transport) {
	srv, _, lock := acquireWithClock(t, tr, 10*time.Second)
	ka, err := lock.KeepAlive(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Match: hasIFEQ, Gate: gate})
	ctx, cancel := context.WithCancel(ctxT(t))
	result := make(chan error, 1)
	go func() { _, err := lock.ResetExpiry(ctx, time.Minute); result <- err }()
	renewal := waitLog(t, srv, isRenewal("k"))
	cancel()
	// The caller returns once the fence answered (rule FenceBeforeReturn),
	// with the renewal's unknown outcome.
	if err := <-result; !errors.Is(err, context.Canceled) || !errors.Is(err, lease.ErrOutcomeUnknown) || errors.Is(err, lease.ErrFencePending) {
		t.Fatalf("ResetExpiry = %v; want context.Canceled and the outcome unknown, once fenced", err)
	}
	if !ka.OwnershipLost() || lock.State() == lease.StateHeld {
		t.Fatalf("keep-alive lost %v, state %v; want the keep-alive cancelled first, not Held", ka.OwnershipLost(), lock.State())
	}
	if kill := waitLog(t, srv, isKill); kill.Seq < renewal.Seq {
		t.Fatalf("fence (seq %d) must follow the renewal (seq %d)", kill.Seq, renewal.Seq)
	}
	eventually(t, "Lost once the fence answered", func() bool { return lock.State() == lease.StateLost })
	if ok, err := lock.ResetExpiry(ctxT(t), time.Minute); ok || err != nil {
		t.Fatalf("later reset = %v, %v; want false", ok, err)
	}
}

func caseVerifyStillHeldAsksThePrimaryAndChangesNoState(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	ctx := ctxT(t)
	lock, err := locks.WithKeyPrefix("tenant:").Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if held, err := lock.VerifyStillHeld(ctx); !held || err != nil {
		t.Fatalf("VerifyStillHeld = %v, %v; want true", held, err)
	}
	if seqOf(srv.Log(), isCommand("GET", "tenant:k")) == 0 {
		t.Fatal("VerifyStillHeld did not GET the prefixed key")
	}
	srv.Exec("SET", "tenant:k", "someone-else")
	if held, err := lock.VerifyStillHeld(ctx); held || err != nil {
		t.Fatalf("VerifyStillHeld = %v, %v; want false", held, err)
	}
	if lock.State() != lease.StateHeld {
		t.Fatalf("state %v; VerifyStillHeld must not change it", lock.State())
	}
}

func caseManagedRenewalWithoutClientPermissionNamesTheMissingPermission(t *testing.T, tr Transport) {
	cases := []struct {
		missing string
		allowed []string
	}{
		{"CLIENT KILL", []string{"set", "get", "delex", "client|id", "client|info"}},
		{"CLIENT ID", []string{"set", "get", "delex"}},
	}
	for _, c := range cases {
		t.Run(c.missing, func(t *testing.T) {
			srv := startSim(t, sim.Config{Profile: sim.Redis84})
			srv.SetUser("locker", "lockerpw", c.allowed...)
			locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "locker", "lockerpw", true))
			ctx := ctxT(t)
			lock, err := locks.Acquire(ctx, "k", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Close()
			check := func(what string, err error) {
				t.Helper()
				var permErr *lease.PermissionError
				if !errors.Is(err, lease.ErrFencingNotPermitted) || !errors.As(err, &permErr) ||
					permErr.Command != c.missing || !strings.Contains(err.Error(), c.missing) {
					t.Fatalf("%s = %v; want a *PermissionError naming %s", what, err, c.missing)
				}
			}
			_, err = lock.KeepAlive(ctx)
			check("KeepAlive", err)
			_, err = lock.ResetExpiry(ctx, time.Minute)
			check("ResetExpiry", err)
			_, err = locks.Acquire(ctx, "k2", time.Minute, lease.WithKeepAlive())
			check("Acquire(WithKeepAlive)", err)
			if seqOf(srv.Log(), isCommand("SET", "k2")) != 0 {
				t.Fatal("Acquire(WithKeepAlive) sent the SET although keep-alive cannot run")
			}
			if ok, err := locks.ResetExpiry(ctx, "k", lock.Token(), time.Minute); !ok || err != nil {
				t.Fatalf("raw ResetExpiry = %v, %v; want true (no CLIENT permission needed)", ok, err)
			}
		})
	}
}

func caseEstimatesCountFromBeforeTheSend(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Gate: gate})
	result := make(chan *lease.Lock, 1)
	go func() {
		lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		result <- lock
	}()
	waitLog(t, srv, isAcquire)
	clock.Advance(3 * time.Second) // the reply takes 3s
	close(gate)
	lock := <-result
	defer lock.Close()
	if got := lock.RemainingEstimate(); got != estimateOf(10*time.Second)-3*time.Second {
		t.Fatalf("RemainingEstimate = %v; want 7s (counted from before the SET was sent)", got)
	}
	clock.Advance(7 * time.Second)
	if lock.RemainingEstimate() != 0 {
		t.Fatalf("RemainingEstimate = %v after the lease; want 0", lock.RemainingEstimate())
	}
	before := len(srv.Log())
	if ok, err := lock.ResetExpiry(ctxT(t), time.Minute); ok || err != nil {
		t.Fatalf("ResetExpiry after local expiry = %v, %v; want false without sending", ok, err)
	}
	if len(srv.Log()) != before {
		t.Fatalf("a reset after local expiry sent %v", srv.Log()[before:])
	}
}

func caseResetTimedOutAfterTheSendIsFencedAndLost(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84, lease.WithCommandTimeout(100*time.Millisecond))
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Match: hasIFEQ, Gate: gate})
	if _, err := lock.ResetExpiry(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ResetExpiry = %v; want the command timeout", err)
	}
	if lock.State() != lease.StateLost || seqOf(srv.Log(), isKill) == 0 {
		t.Fatalf("state %v, fence sent %v; want Lost and fenced", lock.State(), seqOf(srv.Log(), isKill) != 0)
	}
}

func init() {
	register(
		Case{"ResetExpiryAppliesTheDurationFromNow", caseResetExpiryAppliesTheDurationFromNow},
		Case{"ResetExpiryFalseLosesTheLockAndLaterResetsSendNothing", caseResetExpiryFalseLosesTheLockAndLaterResetsSendNothing},
		Case{"UncertainResetCancelsKeepAliveThenFencesAfterTheRenewal", caseUncertainResetCancelsKeepAliveThenFencesAfterTheRenewal},
		Case{"VerifyStillHeldAsksThePrimaryAndChangesNoState", caseVerifyStillHeldAsksThePrimaryAndChangesNoState},
		Case{"ManagedRenewalWithoutClientPermissionNamesTheMissingPermission", caseManagedRenewalWithoutClientPermissionNamesTheMissingPermission},
		Case{"EstimatesCountFromBeforeTheSend", caseEstimatesCountFromBeforeTheSend},
		Case{"ResetTimedOutAfterTheSendIsFencedAndLost", caseResetTimedOutAfterTheSendIsFencedAndLost},
	)
}
