package lease

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

// managedSim starts a sim node of profile and Locks on it (default user).
func managedSim(t *testing.T, profile sim.Profile, opts ...Option) (*sim.Server, *Locks) {
	t.Helper()
	srv := startSim(t, sim.Config{Profile: profile})
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), opts...)
	return srv, locks
}

// useClock makes the managed handles of locks run on clock (before any lock).
// useClock puts locks on clock, with polling sleeps of exactly RetryEvery
// (no jitter), so that virtual-time tests know when the next try comes.
func useClock(locks *Locks, clock actor.Clock) {
	locks.driver().UseClock(clock, func() float64 { return 0.5 })
}

// isCommand matches log entries whose first args equal prefix (case-insensitive name).
func isCommand(prefix ...string) func(sim.Entry) bool {
	return func(e sim.Entry) bool {
		if len(e.Args) < len(prefix) || !strings.EqualFold(e.Args[0], prefix[0]) {
			return false
		}
		return slices.Equal(e.Args[1:len(prefix)], prefix[1:])
	}
}

// waitLog waits (bounded by the test ctx) for a log entry.
func waitLog(t *testing.T, srv *sim.Server, match func(sim.Entry) bool) sim.Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e, err := srv.WaitFor(ctx, match)
	if err != nil {
		t.Fatalf("waiting for a command in the log: %v; log %v", err, srv.Log())
	}
	return e
}

// waitDone waits (bounded) for ctx to be cancelled.
func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("context not cancelled within 10s")
	}
}

// eventually polls cond (bounded) for state that settles asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// isRenewal matches SET key … IFEQ … (the native renewal).
func isRenewal(key string) func(sim.Entry) bool {
	return func(e sim.Entry) bool {
		return len(e.Args) >= 5 && strings.EqualFold(e.Args[0], "SET") && e.Args[1] == key && strings.EqualFold(e.Args[3], "IFEQ")
	}
}

func hasIFEQ(args []string) bool { return len(args) >= 4 && strings.EqualFold(args[3], "IFEQ") }

// estimateOf is the RemainingEstimate of a lease of ttl just confirmed:
// ttl less the default drift margin.
func estimateOf(ttl time.Duration) time.Duration { return ttl - sm.DefaultDrift().Of(ttl) }

// renewedFresh reports whether lock's lease was just confirmed for about
// 10s: its estimate is within a second of a fresh 10s lease. (An exact
// comparison would depend on when, between the renewal timer's due time and
// the end of a manual clock's Advance, the renewal read the clock.)
func renewedFresh(lock *Lock) bool {
	return lock.RemainingEstimate() > estimateOf(10*time.Second)-time.Second
}

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
	// A keep-alive holder's first push read (it tracks the key) is sent in
	// the background: let it end, so that a test's log starts after it (on
	// a loaded machine it came after the log was reset).
	locks.driver().WaitIdle()
	return srv, clock, lock
}

// realCluster70 returns the addresses and password of the real 3-master
// redis-server 7.0 cluster given by the environment, or skips.
func realCluster70(t *testing.T) (addrs []string, password string) {
	t.Helper()
	list := os.Getenv("RESPIRE_REAL_CLUSTER70")
	if list == "" {
		t.Skip("RESPIRE_REAL_CLUSTER70 not set: no real redis-server 7.0 cluster (the Makefile starts one)")
	}
	return strings.Split(list, ","), os.Getenv("RESPIRE_REAL_CLUSTER70_PASSWORD")
}

// isDelete matches a release command of token, whichever the server needs.
func isDelete(token string) func(sim.Entry) bool {
	return func(e sim.Entry) bool {
		name := strings.ToUpper(e.Args[0])
		switch name {
		case "DELEX", "DELIFEQ":
			return slices.Contains(e.Args, token)
		case "EVALSHA", "EVAL":
			return slices.Contains(e.Args, token) && len(e.Args) == 5 // the release script: KEYS[1], ARGV[1]
		}
		return false
	}
}

// ctxFor returns a context that ends after d (and when the test ends).
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
