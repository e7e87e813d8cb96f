package leasesuite

import (
	"context"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

// managedSim starts a sim node of profile and Locks on it (default user).
func managedSim(t *testing.T, tr Transport, profile sim.Profile, opts ...lease.Option) (*sim.Server, *lease.Locks) {
	t.Helper()
	srv := startSim(t, sim.Config{Profile: profile})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, false), opts...)
	return srv, locks
}

// useClock makes the managed handles of locks run on clock (before any lock).
// useClock puts locks on clock, with polling sleeps of exactly RetryEvery
// (no jitter), so that virtual-time tests know when the next try comes.
func useClock(locks *lease.Locks, clock actor.Clock) {
	leaseinternal.Driver(locks).UseClock(clock, func() float64 { return 0.5 })
}

// count returns how many logged commands have name (case-insensitive).
func count(log []sim.Entry, name string) int {
	n := 0
	for _, e := range log {
		if strings.EqualFold(e.Args[0], name) {
			n++
		}
	}
	return n
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

// isKill matches a CLIENT KILL ID … ADDR … fence (not the SKIPME probe).
func isKill(e sim.Entry) bool {
	return len(e.Args) >= 6 && strings.EqualFold(e.Args[0], "CLIENT") && strings.EqualFold(e.Args[1], "KILL") &&
		strings.EqualFold(e.Args[4], "ADDR")
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

// waitExecuted waits (bounded) until n commands matching match have been
// executed on srv (started with History) after its first mark executions.
// It polls: execution has no wake-up of its own, and the condition, not a
// duration, ends the wait.
func waitExecuted(t *testing.T, srv *sim.Server, mark, n int, match func(sim.Entry) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		for _, e := range srv.History()[mark:] {
			if match(sim.Entry{Args: e.Args}) {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d matching commands executed within 10s; log %v", got, n, srv.Log())
		}
		time.Sleep(time.Millisecond)
	}
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

// awaitFailover polls cond (bounded) for a step of a Sentinel failover
// that Sentinel and the servers take by themselves once SENTINEL FAILOVER
// answered: the promotion named by a sentinel, the old primary turned into
// a replica, and the clients' learning of the new primary, which follows
// the sentinels' announcement. Its timing is theirs, not this library's:
// on a loaded machine (the whole suite in parallel beside CPU burners) it
// took more than eventually's 10 s, so it gets a minute. What the cases
// check during the wait (estimates, outsiders' writes) is checked on every
// poll all the same.
func awaitFailover(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (a minute)", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// awaitSwitch is awaitFailover for the wait that follows SENTINEL
// FAILOVER: while no sentinel names a primary other than old, the command
// is sent again every failoverRetry. A forced failover that Sentinel
// aborts (on a loaded machine it can find no replica good enough: its
// last INFO too old) leaves the old primary in place for good; the case is
// about what the clients do once a switch happens, so it asks again.
func awaitSwitch(t *testing.T, what string, sentinels []string, master, password, old string, cond func() bool) (resent int) {
	t.Helper()
	deadline, again := time.Now().Add(time.Minute), time.Now().Add(failoverRetry)
	for !cond() {
		now := time.Now()
		if now.After(deadline) {
			t.Fatalf("timed out waiting for %s (a minute)", what)
		}
		if now.After(again) {
			again = now.Add(failoverRetry)
			if sentinelsPrimary(sentinels, master, password, old) == "" {
				resent++
				t.Logf("no sentinel named a new primary %v after SENTINEL FAILOVER: sent again (%q)", failoverRetry,
					adminExec(sentinels[0], password, "SENTINEL", "FAILOVER", master))
			}
		}
		time.Sleep(time.Millisecond)
	}
	return resent
}

// failoverRetry is how long awaitSwitch waits for a sentinel to name the
// new primary before it sends SENTINEL FAILOVER again: more than twice
// the failover-timeout of scripts/with-servers.sh (3 s), the pause
// Sentinel keeps between two failovers of one primary.
const failoverRetry = 8 * time.Second

// isRenewal matches SET key … IFEQ … (the native renewal).
func isRenewal(key string) func(sim.Entry) bool {
	return func(e sim.Entry) bool {
		return len(e.Args) >= 5 && strings.EqualFold(e.Args[0], "SET") && e.Args[1] == key && strings.EqualFold(e.Args[3], "IFEQ")
	}
}

func hasIFEQ(args []string) bool { return len(args) >= 4 && strings.EqualFold(args[3], "IFEQ") }

// seqOf returns the Seq of the first entry matching, or 0.
func seqOf(log []sim.Entry, match func(sim.Entry) bool) int64 {
	for _, e := range log {
		if match(e) {
			return e.Seq
		}
	}
	return 0
}

// estimateOf is the RemainingEstimate of a lease of ttl just confirmed:
// ttl less the default drift margin.
func estimateOf(ttl time.Duration) time.Duration { return ttl - sm.DefaultDrift().Of(ttl) }

// renewedFresh reports whether lock's lease was just confirmed for about
// 10s: its estimate is within a second of a fresh 10s lease. (An exact
// comparison would depend on when, between the renewal timer's due time and
// the end of a manual clock's Advance, the renewal read the clock.)
func renewedFresh(lock *lease.Lock) bool {
	return lock.RemainingEstimate() > estimateOf(10*time.Second)-time.Second
}
