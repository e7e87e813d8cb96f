package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

func isAcquire(e sim.Entry) bool {
	return len(e.Args) == 6 && strings.EqualFold(e.Args[0], "SET") && strings.EqualFold(e.Args[3], "NX")
}

func acquireTokens(log []sim.Entry) []string {
	var tokens []string
	for _, e := range log {
		if isAcquire(e) {
			tokens = append(tokens, e.Args[2])
		}
	}
	return tokens
}

func caseCancelAfterTheSetWasSentNeverReturnsTheHandleAndDeletesTheOrphan(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Gate: gate})
	ctx, cancel := context.WithCancel(ctxT(t))
	result := make(chan error, 1)
	go func() {
		attempt, err := locks.TryAcquire(ctx, "k", time.Minute)
		if attempt.Acquired() {
			t.Error("a handle was returned after the caller gave up")
		}
		result <- err
	}()
	set := waitLog(t, srv, isAcquire)
	cancel()
	if err := <-result; !errors.Is(err, context.Canceled) { // returned while the SET reply is still held
		t.Fatalf("TryAcquire = %v; want context.Canceled", err)
	}
	close(gate) // the sim holds the connection's later commands behind the delayed reply
	cleanup := waitLog(t, srv, isCommand("DELEX", "k"))
	if cleanup.Args[3] != set.Args[2] {
		t.Fatal("the cleanup delete does not carry the acquisition's token")
	}
	if cleanup.ClientID != set.ClientID {
		t.Fatalf("the cleanup went on connection %d, the SET on %d: it could overtake the SET", cleanup.ClientID, set.ClientID)
	}
	leaseinternal.Driver(locks).WaitIdle() // the cleanup has its answer
	if got := srv.Exec("EXISTS", "k"); got != ":0\r\n" {
		t.Fatalf("orphan lock left behind: EXISTS = %q", got)
	}
}

// contended returns a sim where "k" is held by another owner, and Locks on a
// manual clock.
func contended(t *testing.T, tr Transport) (*sim.Server, *lease.Locks, *actor.ManualClock) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	srv.Exec("SET", "k", "other", "PX", "60000")
	return srv, locks, clock
}

func caseWaitingAcquisitionCutsTheLastSleepToTheBudgetAndTriesOnceMore(t *testing.T, tr Transport) {
	srv, locks, clock := contended(t, tr)
	result := make(chan lease.Attempt, 1)
	go func() {
		a, err := locks.TryAcquire(ctxT(t), "k", time.Minute, lease.WithWait(500*time.Millisecond), lease.WithRetryEvery(5*time.Second))
		if err != nil {
			t.Error(err)
		}
		result <- a
	}()
	eventually(t, "polling sleep", func() bool { return clock.Pending() == 1 })
	clock.Advance(500 * time.Millisecond)
	if a := <-result; a.Acquired() {
		t.Fatal("acquired a lock held by another owner")
	}
	tokens := acquireTokens(srv.Log())
	if len(tokens) != 2 || tokens[0] == tokens[1] {
		t.Fatalf("SET tokens %d (distinct: %v); want 2 fresh ones", len(tokens), len(tokens) == 2 && tokens[0] != tokens[1])
	}
}

func caseWaitingAcquisitionPollsEveryRetryEveryUntilFree(t *testing.T, tr Transport) {
	srv, locks, clock := contended(t, tr)
	result := make(chan error, 1)
	var lock *lease.Lock
	go func() {
		var err error
		lock, err = locks.Acquire(ctxT(t), "k", time.Minute, lease.WithWait(time.Second), lease.WithRetryEvery(100*time.Millisecond))
		result <- err
	}()
	eventually(t, "polling sleep", func() bool { return clock.Pending() == 1 })
	srv.Exec("DEL", "k")
	clock.Advance(100 * time.Millisecond)
	if err := <-result; err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	defer lock.Close()
	if n := len(acquireTokens(srv.Log())); n != 2 {
		t.Fatalf("%d SETs; want 2", n)
	}
}

func caseCancelInterruptsThePollingSleep(t *testing.T, tr Transport) {
	srv, locks, clock := contended(t, tr)
	ctx, cancel := context.WithCancel(ctxT(t))
	result := make(chan error, 1)
	go func() {
		_, err := locks.Acquire(ctx, "k", time.Minute, lease.WithWait(time.Hour))
		result <- err
	}()
	eventually(t, "polling sleep", func() bool { return clock.Pending() == 1 })
	cancel()
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v; want context.Canceled", err)
	}
	if n := len(acquireTokens(srv.Log())); n != 1 {
		t.Fatalf("%d SETs; want 1", n)
	}
	if clock.Pending() != 0 {
		t.Fatal("the polling timer was not stopped")
	}
}

func init() {
	register(
		Case{"CancelAfterTheSetWasSentNeverReturnsTheHandleAndDeletesTheOrphan", caseCancelAfterTheSetWasSentNeverReturnsTheHandleAndDeletesTheOrphan},
		Case{"WaitingAcquisitionCutsTheLastSleepToTheBudgetAndTriesOnceMore", caseWaitingAcquisitionCutsTheLastSleepToTheBudgetAndTriesOnceMore},
		Case{"WaitingAcquisitionPollsEveryRetryEveryUntilFree", caseWaitingAcquisitionPollsEveryRetryEveryUntilFree},
		Case{"CancelInterruptsThePollingSleep", caseCancelInterruptsThePollingSleep},
	)
}
