package lease

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/internal/simtest"
	"github.com/respire-go/respire/sim"
)

// simChildEnv makes the test binary serve a sim node instead of testing
// (TestLazyContextHelper_ServesASimNodeInAChildProcess): allocation counts
// are per process, and an in-process sim would count its own.
const simChildEnv = "RESPIRE_LEASE_SIM_CHILD"

// TestLazyContextHelper_ServesASimNodeInAChildProcess is not a test: run by
// startSimProcess in a child process, it serves a Redis 8.4 sim node,
// prints its address and serves until its standard input closes.
func TestLazyContextHelper_ServesASimNodeInAChildProcess(t *testing.T) {
	if os.Getenv(simChildEnv) == "" {
		t.Skip("helper process of TestLockContext_IsLazyAPairThatNeverAsksForItAllocatesNoMore")
	}
	srv := simtest.Start(t, sim.Config{Profile: sim.Redis84, Password: simPassword, ExpireEvery: -1})
	os.Stdout.WriteString("SIM-ADDR " + srv.Addr() + "\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startSimProcess starts a sim node in a child process (this test binary)
// and returns its address; the child stops when the test ends.
func startSimProcess(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLazyContextHelper_ServesASimNodeInAChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), simChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the sim process: %v", err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		defer close(addr)
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if rest, ok := strings.CutPrefix(lines.Text(), "SIM-ADDR "); ok {
				addr <- rest
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatal("the sim process exited without an address")
		}
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("the sim process did not print its address within 30s")
	}
	return ""
}

// TestLockContext_IsLazyAPairThatNeverAsksForItAllocatesNoMore: Lock.Context
// is created on first call. An uncontended TryAcquire + Release pair that
// never calls it allocates no more than the baseline, less than a pair that
// does, and arms no timer.
func TestLockContext_IsLazyAPairThatNeverAsksForItAllocatesNoMore(t *testing.T) {
	addr := startSimProcess(t)
	locks := newLocks(t, newClient(t, []string{addr}, "", simPassword, false))
	ctx := context.Background()
	pair := func(askContext bool) func() {
		return func() {
			a, err := locks.TryAcquire(ctx, "k", time.Minute)
			if err != nil || !a.Acquired() {
				t.Fatalf("TryAcquire = %v, %v", a.Acquired(), err)
			}
			if askContext {
				_ = a.Lock().Context()
			}
			if out, err := a.Lock().Release(ctx); out != Released || err != nil {
				t.Fatalf("Release = %v, %v", out, err)
			}
		}
	}
	// The least of three measurements: what else the process does (rueidis'
	// and the runtime's background work) can only add to a count.
	measure := func(f func()) float64 {
		least := testing.AllocsPerRun(200, f)
		for range 2 {
			least = min(least, testing.AllocsPerRun(200, f))
		}
		return least
	}
	lazy, asked := measure(pair(false)), measure(pair(true))
	t.Logf("allocs per pair: %v without Context, %v with it (baseline %d)", lazy, asked, pairAllocsBaseline)
	if lazy > pairAllocsBaseline {
		t.Errorf("an uncontended pair that never asks for Context allocates %v times; want at most %d", lazy, pairAllocsBaseline)
	}
	if lazy >= asked {
		t.Errorf("a pair without Context allocates %v times, one with it %v: the context is not created lazily", lazy, asked)
	}

	// Nothing watches a lease nobody asked about: no timer is armed.
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	a, err := locks.TryAcquire(ctx, "k", time.Minute)
	if err != nil || !a.Acquired() {
		t.Fatalf("TryAcquire = %v, %v", a.Acquired(), err)
	}
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers armed for a lock whose Context was never asked for; want 0", n)
	}
	_ = a.Lock().Context()
	if n := clock.Pending(); n != 1 {
		t.Fatalf("%d timers armed once Context was asked for; want 1 (the lease's end)", n)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestContentionIsNotAnError_ARefusedTryMakesNoLock: a TryAcquire that the
// server refuses (another owner holds the key) makes no Lock: it allocates
// its token and nothing else of ours (tryOnce; the core's answer to the
// refusal is checked in statemachine), which is what contention costs.
func TestContentionIsNotAnError_ARefusedTryMakesNoLock(t *testing.T) {
	addr := startSimProcess(t)
	locks := newLocks(t, newClient(t, []string{addr}, "", simPassword, false))
	ctx := context.Background()
	held, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	refused := func() {
		a, err := locks.TryAcquire(ctx, "k", time.Minute)
		if err != nil || a.Acquired() {
			t.Fatalf("TryAcquire = %v, %v; want not acquired", a.Acquired(), err)
		}
	}
	least := testing.AllocsPerRun(200, refused)
	for range 2 {
		least = min(least, testing.AllocsPerRun(200, refused))
	}
	t.Logf("allocs per refused try: %v (pair baseline %d)", least, pairAllocsBaseline)
	if want := float64(pairAllocsBaseline - 1); least > want {
		t.Errorf("a refused try allocates %v times; want at most %v (its token)", least, want)
	}
}
