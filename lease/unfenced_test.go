package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

// noClientPermission is a user of a Redis 8.4 profile that may lock but may
// not run any CLIENT subcommand.
var noClientPermission = []string{"set", "get", "delex"}

func unfencedLocks(t *testing.T, opts ...Option) (*sim.Server, *Locks, *actor.ManualClock) {
	t.Helper()
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	srv.SetUser("locker", "lockerpw", noClientPermission...)
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw", true), opts...)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	return srv, locks, clock
}

func TestUnfencedRenewal_ByDefaultAKeepAliveNeedsClientPermission(t *testing.T) {
	_, locks, _ := unfencedLocks(t)
	_, err := locks.Acquire(ctxT(t), "k", 10*time.Second, WithKeepAlive())
	var permErr *PermissionError
	if !errors.Is(err, ErrFencingNotPermitted) || !errors.As(err, &permErr) {
		t.Fatalf("Acquire(WithKeepAlive) = %v; want the *PermissionError", err)
	}
}

func TestUnfencedRenewal_KeepAliveRenewsForAUserWithoutClientPermission(t *testing.T) {
	srv, locks, clock := unfencedLocks(t, WithUnfencedRenewal())
	lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, WithKeepAlive())
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
func TestUnfencedRenewal_AnInterruptedRenewalEndsTheLockWithoutAFence(t *testing.T) {
	srv, locks, clock := unfencedLocks(t, WithUnfencedRenewal())
	lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, WithKeepAlive())
	if err != nil {
		t.Fatalf("Acquire(WithKeepAlive) = %v", err)
	}
	defer lock.Close()
	work := lock.Context()
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Command: "SET", Match: hasIFEQ})
	clock.Advance(5 * time.Second)
	waitDone(t, work)
	var loss *LossError
	cause := context.Cause(work)
	if !errors.As(cause, &loss) || loss.Reason != LossRenewalUnknown || !errors.Is(cause, ErrOutcomeUnknown) {
		t.Fatalf("cause %v; want a *LossError (renewal outcome unknown) matching ErrOutcomeUnknown", cause)
	}
	if lock.State() != StateLost {
		t.Fatalf("state %v; want Lost", lock.State())
	}
	if seqOf(srv.Log(), isKill) != 0 {
		t.Fatal("a CLIENT KILL was sent for a session that may not be fenced")
	}
}
