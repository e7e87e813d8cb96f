package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/internal/leakcheck"
	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

// TestClientClosed_KeepAlivesEndWithErrClientClosedAndNoRenewalReachesTheServerAfter:
// the rueidis client is closed while keep-alives run (one started with
// Lock.KeepAlive, one owned through WithKeepAlive). At their next renewal
// both end with ErrClientClosed; from then on no command of either lock
// reaches the server (but a push watcher's read asked for before); each lock's context ends at its estimate with an
// error matching both ErrExpired and ErrClientClosed; and Locks.Close
// still returns, leaving no goroutine behind.
func caseClientClosed_KeepAlivesEndWithErrClientClosedAndNoRenewalReachesTheServerAfter(t *testing.T, tr Transport) {
	const ttl = 10 * time.Second
	leaks := append(leakcheck.RueidisBackground(), goleak.IgnoreCurrent())
	t.Cleanup(func() { goleak.VerifyNone(t, leaks...) }) // after every subtest and its clean-ups
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks, closeClient := tr.Locks(t, clientOf([]string{tg.srv.Addr()}, "", tg.password, false), lease.WithIdleCheck(0)) // the client is probed at every renewal batch
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		ctx := ctxT(t)
		started, err := locks.Acquire(ctx, "started", ttl)
		if err != nil {
			t.Fatal(err)
		}
		ka, err := started.KeepAlive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		owned, err := locks.Acquire(ctx, "owned", ttl, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		type kept struct {
			name       string
			lock       *lease.Lock
			err        func() error // the keep-alive's Err
			ctx        context.Context
			detectedAt int // the server log's length when its keep-alive ended; -1 before
		}
		all := []*kept{
			{name: "started", lock: started, err: ka.Err, detectedAt: -1},
			{name: "owned", lock: owned, err: func() error { return ownedKeepAliveErr(owned) }, detectedAt: -1},
		}
		for _, k := range all {
			k.ctx = k.lock.Context()
		}
		// renewNext advances the clock to the next renewal of a running
		// keep-alive and waits until each one due has renewed or ended.
		renewNext := func() {
			t.Helper()
			var due []*kept
			next := time.Duration(1<<63 - 1)
			for _, k := range all {
				if k.err() != nil {
					continue
				}
				switch d := sm.RenewalDelay(k.lock.Duration(), k.lock.RemainingEstimate()); {
				case d < next:
					next, due = d, []*kept{k}
				case d == next:
					due = append(due, k)
				}
			}
			clock.Advance(next)
			eventually(t, "the due keep-alives renewed or ended", func() bool {
				for _, k := range due {
					if k.err() == nil && !renewedFresh(k.lock) {
						return false
					}
				}
				return true
			})
			for _, k := range due {
				if k.err() != nil && k.detectedAt < 0 {
					k.detectedAt = len(tg.srv.Log())
					if k.ctx.Err() != nil {
						t.Fatalf("the %s lock's context ended with its keep-alive: %v; want it to last until the estimate", k.name, context.Cause(k.ctx))
					}
				}
			}
		}

		renewNext() // renewals reach the server while the client is open
		for _, k := range all {
			if k.err() != nil {
				t.Fatalf("the %s keep-alive ended with the client open: %v", k.name, k.err())
			}
			waitEntry(t, tg.srv, isExtendOf(k.name))
		}

		closeClient()
		time.Sleep(20 * time.Millisecond) // a client that can only ask (rueidis, valkey-go) probes at most every 10ms
		for tries := 0; all[0].err() == nil || all[1].err() == nil; tries++ {
			if tries == 5 {
				t.Fatalf("the keep-alives still run after %d renewals with the client closed", tries)
			}
			// A renewal that runs before the closed client is detected is
			// confirmed on the lock's own connection, which rueidis leaves
			// open; a later one detects it.
			renewNext()
		}
		last := time.Duration(0)
		for _, k := range all {
			if cause := k.err(); !errors.Is(cause, lease.ErrClientClosed) {
				t.Fatalf("the %s keep-alive's cause %v; want ErrClientClosed", k.name, cause)
			}
			last = max(last, k.lock.RemainingEstimate())
		}
		if cause := context.Cause(ka.Context()); !errors.Is(cause, lease.ErrClientClosed) {
			t.Fatalf("KeepAlive.Context's cause %v; want ErrClientClosed", cause)
		}

		clock.Advance(last) // every estimate runs out
		for _, k := range all {
			cause := causeOf(t, k.ctx)
			if !errors.Is(cause, lease.ErrExpired) || !errors.Is(cause, lease.ErrClientClosed) || errors.Is(cause, lease.ErrOwnershipLost) {
				t.Fatalf("the %s lock's cause %v; want one matching ErrExpired and ErrClientClosed", k.name, cause)
			}
			assertOneLeasePrefix(t, k.name+" lock's cause", cause)
		}
		clock.Advance(time.Minute) // any timer left would fire now
		log := tg.srv.Log()
		for _, k := range all {
			for _, e := range log[k.detectedAt:] {
				// A push watcher's owner-compared read (a GET, which
				// changes nothing) that a renewal before the detection
				// asked for may still land after it; anything else may not.
				if slices.Contains(e.Args, k.name) && !strings.EqualFold(e.Args[0], "GET") {
					t.Fatalf("%q reached the server after the closed client was detected", e.Args)
				}
			}
		}

		closed := make(chan struct{})
		go func() { locks.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("Locks.Close after the client was closed did not return within 10s")
		}
	})
}

// TestClientClosed_ARenewalRetriedByKeyIsNotSentAfterTheDetection: lock b's
// keep-alive renewal was refused as not run (LOADING), so its retry is
// routed by key on its own instead of through the node's renewal batches.
// Once the closed client was detected (lock a's keep-alive ended with
// ErrClientClosed), that retry must not reach the server either: b's
// keep-alive ends with ErrClientClosed too.
func caseClientClosed_ARenewalRetriedByKeyIsNotSentAfterTheDetection(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	locks, closeClient := tr.Locks(t, clientOf([]string{srv.Addr()}, "", simPassword, false), lease.WithIdleCheck(0))
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	ctx := ctxT(t)
	b, err := locks.Acquire(ctx, "b", time.Minute, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(25 * time.Second)
	a, err := locks.Acquire(ctx, "a", 10*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	// b renews first (due in 4.398s) and is refused as not run: its retry
	// comes 1s later, after a's renewal (due in 4.898s).
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Error: "LOADING Redis is loading the dataset in memory",
		Match: func(args []string) bool { return hasIFEQ(args) && args[1] == "b" }})
	clock.Advance(sm.RenewalDelay(b.Duration(), b.RemainingEstimate()))
	eventually(t, "b's retry armed", func() bool { return leaseinternal.Driver(locks).ArmedTimers() == 4 }) // each lock's deadline and renewal timers
	closeClient()
	// ClientAlive probes at most once per millisecond: a's renewal may come
	// within that of b's probe, so wait until the closed client is noticed.
	eventually(t, "the closed client noticed", func() bool { return leaseinternal.Driver(locks).Transport().ClientAlive() != nil })
	clock.Advance(sm.RenewalDelay(a.Duration(), a.RemainingEstimate()))
	eventually(t, "a's keep-alive ended", func() bool { return ownedKeepAliveErr(a) != nil })
	if err := ownedKeepAliveErr(a); !errors.Is(err, lease.ErrClientClosed) {
		t.Fatalf("a's keep-alive ended with %v; want ErrClientClosed", err)
	}
	srv.ResetLog()             // the detection
	clock.Advance(time.Second) // b's retry
	eventually(t, "b's retry settled", func() bool {
		return ownedKeepAliveErr(b) != nil || b.RemainingEstimate() > estimateOf(time.Minute)-time.Second
	})
	if err := ownedKeepAliveErr(b); !errors.Is(err, lease.ErrClientClosed) {
		t.Errorf("b's keep-alive: %v; want it ended with ErrClientClosed", err)
	}
	if n := countArgs(srv.Log(), "SET", "b"); n != 0 {
		t.Errorf("%d renewals of b reached the server after the closed client was detected: %v", n, srv.Log())
	}
}

// testBinaryStart is about when this process started (package
// initialisation), for the test below.
var testBinaryStart = time.Now()

// clientClosedEarlyEnv makes
// TestClientClosed_DetectedEvenInAProcessYoungerThanTheIdleCheck run its
// scenario (in the child process it starts).
const clientClosedEarlyEnv = "RESPIRE_LEASE_CLIENT_CLOSED_EARLY"

// TestClientClosed_DetectedEvenInAProcessYoungerThanTheIdleCheck: a closed
// rueidis client ends keep-alives however young the process is: with the
// default idle check (1s), a process that closes its client within its
// first second still sees its keep-alive end with ErrClientClosed at the
// next renewals. Run in a fresh child process, so that it is young.
func caseClientClosed_DetectedEvenInAProcessYoungerThanTheIdleCheck(t *testing.T, tr Transport) {
	if os.Getenv(clientClosedEarlyEnv) == "" {
		cmd := exec.Command(os.Args[0], runFlag(t, "ClientClosed_DetectedEvenInAProcessYoungerThanTheIdleCheck", "ClientClosed_DetectedEvenInAProcessYoungerThanTheIdleCheck"),
			"-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), clientClosedEarlyEnv+"=1")
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), "--- SKIP") {
			t.Skipf("the child process was too slow to be young:\n%s", out)
		}
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("in a fresh process (it must run and pass): %v\n%s", err, out)
		}
		return
	}
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	locks, closeClient := tr.Locks(t, clientOf([]string{srv.Addr()}, "", simPassword, false)) // the default idle check: the client is probed at most once a second
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	closeClient()
	time.Sleep(20 * time.Millisecond) // a client that can only ask (rueidis, valkey-go) probes at most every 10ms
	for renewal := 1; ownedKeepAliveErr(lock) == nil; renewal++ {
		if renewal > 2 {
			t.Fatalf("the keep-alive still runs after %d renewals with the client closed", renewal-1)
		}
		clock.Advance(sm.RenewalDelay(lock.Duration(), lock.RemainingEstimate()))
		eventually(t, "the renewal settled", func() bool {
			return ownedKeepAliveErr(lock) != nil || renewedFresh(lock)
		})
	}
	if young := time.Since(testBinaryStart); young >= lease.DefaultIdleCheck {
		t.Skipf("the process is %v old: not within its first idle-check period", young)
	}
	if err := ownedKeepAliveErr(lock); !errors.Is(err, lease.ErrClientClosed) {
		t.Fatalf("the keep-alive ended with %v; want ErrClientClosed", err)
	}
}

func init() {
	register(
		Case{"ClientClosed_KeepAlivesEndWithErrClientClosedAndNoRenewalReachesTheServerAfter", caseClientClosed_KeepAlivesEndWithErrClientClosedAndNoRenewalReachesTheServerAfter},
		Case{"ClientClosed_ARenewalRetriedByKeyIsNotSentAfterTheDetection", caseClientClosed_ARenewalRetriedByKeyIsNotSentAfterTheDetection},
		Case{"ClientClosed_DetectedEvenInAProcessYoungerThanTheIdleCheck", caseClientClosed_DetectedEvenInAProcessYoungerThanTheIdleCheck},
	)
}
