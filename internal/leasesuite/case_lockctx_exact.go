package leasesuite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/respire-go/respire/lease"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// TestContextEndsByTheEarliestExpiryInFlight_AShorteningResetWithASlowReply:
// a lock without keep-alive whose Context is watched sends
// ResetExpiry(300ms) on a 10 s lease and its reply is held back. The
// Context must end by the reset's own deadline (counted from its send),
// while the server still holds the key for us: not at the old deadline,
// nor when the reply finally arrives.
func caseContextEndsByTheEarliestExpiryInFlight_AShorteningResetWithASlowReply(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := f.locks(t, lease.WithDriftMargin(0.25, 20*time.Millisecond))
		ctx := ctxT(t)
		lock, err := locks.Acquire(ctx, "k", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		work := lock.Context()
		f.sessionConn(t, lock).Stall(faultproxy.ToClient) // the reset runs; its reply is held
		const reset = 400 * time.Millisecond
		sent := time.Now()
		resetDone := make(chan struct{})
		go func() {
			defer close(resetDone)
			_, _ = lock.ResetExpiry(ctx, reset)
		}()
		waitEntry(t, f.srv, isExtendOf("k"))
		// The server's key now ends at most
		// context must be over by then, with the server still holding it.
		select {
		case <-work.Done():
		case <-time.After(reset + 2*time.Second):
			t.Fatalf("Lock.Context still live %v after a %v reset was sent with its reply held back", time.Since(sent), reset)
		}
		if f.clock == nil { // real time on the server: its key must still be ours
			if got := f.srv.Exec("EXISTS", "k"); got != ":1\r\n" {
				t.Fatalf("when the context ended the key was already gone (EXISTS = %q): a rival could have held it", got)
			}
		}
		if elapsed := time.Since(sent); elapsed > reset+time.Second {
			t.Fatalf("context ended %v after the send; want by the reset's deadline %v", elapsed, reset)
		}
		if !errors.Is(context.Cause(work), lease.ErrOwnershipLost) {
			t.Fatalf("cause = %v; want ErrOwnershipLost (the reset's outcome was still unknown)", context.Cause(work))
		}
		f.proxy.UnstallAll(faultproxy.Both)
		<-resetDone
	})
}

// frozenClock is a clock whose time is set by the test and whose timers
// never fire: what a process sees in the first moments after it resumes
// from a pause (SIGSTOP, a long GC) before any timer goroutine has run.
type frozenClock struct {
	mu  sync.Mutex
	now time.Duration
}

func (c *frozenClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *frozenClock) set(now time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

func (c *frozenClock) AfterFunc(time.Duration, func()) actor.Timer { return frozenTimer{} }

type frozenTimer struct{}

func (frozenTimer) Stop() bool               { return true }
func (frozenTimer) Reset(time.Duration) bool { return true }

// TestLeaseContextErrIsExact_AfterAPausePastTheLease: time passes the
// lease's end while no timer has run (a paused process that just
// resumed). Lock.Context().Err() and the Err of a ContextFrom context must
// already report the end, with its cause, on the very first check: the
// work must not do one more unit under a lease that is over.
func caseLeaseContextErrIsExact_AfterAPausePastTheLease(t *testing.T, tr Transport) {
	for _, keepAlive := range []bool{false, true} {
		name := "without keep-alive"
		var opts []lease.AcquireOption
		if keepAlive {
			name, opts = "with keep-alive", []lease.AcquireOption{lease.WithKeepAlive()}
		}
		t.Run(name, func(t *testing.T) {
			srv := startSim(t, sim.Config{Profile: sim.Redis70})
			locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, false), lease.WithoutPush())
			clock := &frozenClock{now: time.Hour}
			useClock(locks, clock)
			lock, err := locks.Acquire(ctxT(t), "k", 2*time.Second, opts...)
			if err != nil {
				t.Fatal(err)
			}
			work := lock.Context()
			derived, cancel := lock.ContextFrom(context.Background())
			defer cancel()
			if work.Err() != nil || derived.Err() != nil {
				t.Fatalf("Err before the pause = %v, %v; want nil", work.Err(), derived.Err())
			}
			clock.set(time.Hour + 3*time.Second) // the pause ends past the lease; no timer has run
			if err := work.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Lock.Context().Err() right after the pause = %v; want context.Canceled", err)
			}
			if err := derived.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("ContextFrom(...).Err() right after the pause = %v; want context.Canceled", err)
			}
			if cause := context.Cause(work); cause == nil || strings.Contains(cause.Error(), "canceled") {
				t.Fatalf("Cause = %v; want the lease's end", cause)
			}
			if got := context.Cause(derived); got != context.Cause(work) {
				t.Fatalf("ContextFrom cause = %v; want the lease's %v", got, context.Cause(work))
			}
			select {
			case <-work.Done():
			default:
				t.Fatal("Err reported the end but Done is not closed")
			}
		})
	}
}

// pausedHolderEnv makes the test binary a lock holder that works in a
// tight loop (TestPausedHolderHelper).
const pausedHolderEnv = "RESPIRE_LEASE_PAUSED_HOLDER"

// TestPausedHolderHelper is not a test: run by
// TestLeaseContextErrIsExact_APausedProcessSeesTheEndOnItsFirstCheck (and
// TestLeaseContextErrIsExact_APausedKeepAliveHolderSeesTheEndOnItsFirstCheck) in a
// child process (GOMAXPROCS=1), it takes a 1 s lock on the sim node at
// $RESPIRE_LEASE_PAUSED_HOLDER, prints HELD, then does units of work for as
// long as Lock.Context().Err() and a ContextFrom context's Err are nil. A
// unit done more than the lease after the acquisition returned is printed
// as VIOLATION; the end as ENDED. With $RESPIRE_LEASE_PAUSED_KEEPALIVE set
// it is the keep-alive holder instead (pausedKeepAliveHolder).
func casePausedHolderHelper(t *testing.T, tr Transport) {
	addr := os.Getenv(pausedHolderEnv)
	if addr == "" {
		t.Skip("helper process of TestLeaseContextErrIsExact_APausedProcessSeesTheEndOnItsFirstCheck")
	}
	if os.Getenv(pausedKeepAliveEnv) != "" {
		pausedKeepAliveHolder(t, tr, addr)
		return
	}
	locks := newLocks(t, tr, clientOf([]string{addr}, "", simPassword, false), lease.WithoutPush())
	const ttl = time.Second
	lock, err := locks.Acquire(ctxT(t), "paused", ttl)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	work := lock.Context()
	derived, cancel := lock.ContextFrom(context.Background())
	defer cancel()
	os.Stdout.WriteString("HELD\n")
	for units := 0; ; units++ {
		elapsed := time.Since(start)
		if work.Err() != nil || derived.Err() != nil {
			fmt.Printf("ENDED after %d units, %v: %v / %v\n", units, elapsed, work.Err(), derived.Err())
			return
		}
		if elapsed > ttl {
			fmt.Printf("VIOLATION: unit %d done %v after the acquisition, past the %v lease\n", units, elapsed, ttl)
		}
	}
}

// TestLeaseContextErrIsExact_APausedProcessSeesTheEndOnItsFirstCheck: a
// holder process checking its lock's context in a tight loop is stopped
// (SIGSTOP) past its 1 s lease and resumed (SIGCONT). Its very first check
// after the resume must see the lease's end: no unit of work is done under
// a lease that is over, whichever goroutine the runtime schedules first.
func caseLeaseContextErrIsExact_APausedProcessSeesTheEndOnItsFirstCheck(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	for run := range 2 {
		cmd := exec.Command(os.Args[0], runFlag(t, "LeaseContextErrIsExact_APausedProcessSeesTheEndOnItsFirstCheck", "PausedHolderHelper"),
			"-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), pausedHolderEnv+"="+srv.Addr(), "GOMAXPROCS=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		for lines.Scan() && lines.Text() != "HELD" {
		}
		_ = cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(1500 * time.Millisecond) // the pause: past the lease (real time, as a real pause is)
		_ = cmd.Process.Signal(syscall.SIGCONT)
		var report []string
		for lines.Scan() {
			report = append(report, lines.Text())
		}
		_ = cmd.Wait()
		text := strings.Join(report, "\n")
		if strings.Contains(text, "VIOLATION") || !strings.Contains(text, "ENDED") {
			t.Fatalf("run %d: the resumed holder worked on past its lease:\n%s", run, text)
		}
		srv.Exec("DEL", "paused")
	}
}

func init() {
	register(
		Case{"ContextEndsByTheEarliestExpiryInFlight_AShorteningResetWithASlowReply", caseContextEndsByTheEarliestExpiryInFlight_AShorteningResetWithASlowReply},
		Case{"LeaseContextErrIsExact_AfterAPausePastTheLease", caseLeaseContextErrIsExact_AfterAPausePastTheLease},
		Case{"PausedHolderHelper", casePausedHolderHelper},
		Case{"LeaseContextErrIsExact_APausedProcessSeesTheEndOnItsFirstCheck", caseLeaseContextErrIsExact_APausedProcessSeesTheEndOnItsFirstCheck},
	)
}
