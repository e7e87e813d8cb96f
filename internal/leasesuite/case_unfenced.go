package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/lease"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

// noClientPermission is a user of a Redis 8.4 profile that may lock but may
// not run any CLIENT subcommand.
var noClientPermission = []string{"set", "get", "delex"}

func unfencedLocks(t *testing.T, tr Transport, opts ...lease.Option) (*sim.Server, *lease.Locks, *actor.ManualClock) {
	t.Helper()
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	srv.SetUser("locker", "lockerpw", noClientPermission...)
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "locker", "lockerpw", true), opts...)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	return srv, locks, clock
}

func caseUnfencedRenewal_ByDefaultAKeepAliveNeedsClientPermission(t *testing.T, tr Transport) {
	_, locks, _ := unfencedLocks(t, tr)
	_, err := locks.Acquire(ctxT(t), "k", 10*time.Second, lease.WithKeepAlive())
	var permErr *lease.PermissionError
	if !errors.Is(err, lease.ErrFencingNotPermitted) || !errors.As(err, &permErr) {
		t.Fatalf("Acquire(WithKeepAlive) = %v; want the *PermissionError", err)
	}
}

func caseUnfencedRenewal_KeepAliveRenewsForAUserWithoutClientPermission(t *testing.T, tr Transport) {
	srv, locks, clock := unfencedLocks(t, tr, lease.WithUnfencedRenewal())
	lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatalf("Acquire(WithKeepAlive) = %v", err)
	}
	defer lock.Close()
	clock.Advance(5 * time.Second)
	waitLog(t, srv, isRenewal("k"))
	eventually(t, "renewal confirmed", func() bool { return renewedFresh(lock) })
	if ok, err := lock.ResetExpiry(ctxT(t), 20*time.Second); !ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v", ok, err)
	}
	if err := lock.Context().Err(); err != nil {
		t.Fatalf("lock ended: %v", context.Cause(lock.Context()))
	}
}

// An interrupted renewal cannot be fenced: the lock ends at once, with the
// renewal's error, and no CLIENT KILL is attempted.
func caseUnfencedRenewal_AnInterruptedRenewalEndsTheLockWithoutAFence(t *testing.T, tr Transport) {
	srv, locks, clock := unfencedLocks(t, tr, lease.WithUnfencedRenewal())
	lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatalf("Acquire(WithKeepAlive) = %v", err)
	}
	defer lock.Close()
	work := lock.Context()
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Command: "SET", Match: hasIFEQ})
	clock.Advance(5 * time.Second)
	waitDone(t, work)
	var loss *lease.LossError
	cause := context.Cause(work)
	if !errors.As(cause, &loss) || loss.Reason != lease.LossRenewalUnknown || !errors.Is(cause, lease.ErrOutcomeUnknown) {
		t.Fatalf("cause %v; want a *LossError (renewal outcome unknown) matching ErrOutcomeUnknown", cause)
	}
	if lock.State() != lease.StateLost {
		t.Fatalf("state %v; want Lost", lock.State())
	}
	if seqOf(srv.Log(), isKill) != 0 {
		t.Fatal("a CLIENT KILL was sent for a session that may not be fenced")
	}
}

func init() {
	register(
		Case{"UnfencedRenewal_ByDefaultAKeepAliveNeedsClientPermission", caseUnfencedRenewal_ByDefaultAKeepAliveNeedsClientPermission},
		Case{"UnfencedRenewal_KeepAliveRenewsForAUserWithoutClientPermission", caseUnfencedRenewal_KeepAliveRenewsForAUserWithoutClientPermission},
		Case{"UnfencedRenewal_AnInterruptedRenewalEndsTheLockWithoutAFence", caseUnfencedRenewal_AnInterruptedRenewalEndsTheLockWithoutAFence},
	)
}
