package leasesuite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// TestLeaseContextErrIsExact_KeepAliveAfterAPausePastTheLease: a lock
// renewed by a KeepAlive; time passes the lease's end while no timer has
// run (a paused process that just resumed: no renewal went out). The very
// first check of the keep-alive — KeepAlive.Context().Err(), context.Cause
// of it, or KeepAlive.Err() — must already say the lease is lost, as
// Lock.Context().Err() does: the keep-alive's context is the one the
// package docs tell protected work to honour.
func caseLeaseContextErrIsExact_KeepAliveAfterAPausePastTheLease(t *testing.T, tr Transport) {
	checks := map[string]func(k *lease.KeepAlive) error{
		"Context().Err()":  func(k *lease.KeepAlive) error { return k.Context().Err() },
		"Cause(Context())": func(k *lease.KeepAlive) error { return context.Cause(k.Context()) },
		"Err()":            func(k *lease.KeepAlive) error { return k.Err() },
		"OwnershipLost()": func(k *lease.KeepAlive) error {
			if k.OwnershipLost() {
				return lease.ErrOwnershipLost
			}
			return nil
		},
	}
	for name, first := range checks {
		t.Run(name, func(t *testing.T) {
			srv := startSim(t, sim.Config{Profile: sim.Redis70})
			locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, false), lease.WithoutPush())
			clock := &frozenClock{now: time.Hour}
			useClock(locks, clock)
			lock, err := locks.Acquire(ctxT(t), "k", 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			keepAlive, err := lock.KeepAlive(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			work := keepAlive.Context()
			if work.Err() != nil || keepAlive.Err() != nil {
				t.Fatalf("before the pause: Context().Err() = %v, Err() = %v; want nil", work.Err(), keepAlive.Err())
			}
			clock.set(time.Hour + 3*time.Second) // the pause ends past the lease; no timer has run
			if err := first(keepAlive); err == nil {
				t.Fatalf("KeepAlive.%s right after the pause = nil; want the lease's end", name)
			}
			if err := work.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("KeepAlive.Context().Err() = %v; want context.Canceled", err)
			}
			if cause := context.Cause(work); !errors.Is(cause, lease.ErrOwnershipLost) {
				t.Fatalf("KeepAlive's context cause = %v; want ErrOwnershipLost", cause)
			}
			if err := keepAlive.Err(); !errors.Is(err, lease.ErrOwnershipLost) {
				t.Fatalf("KeepAlive.Err() = %v; want ErrOwnershipLost", err)
			}
			select {
			case <-work.Done():
			default:
				t.Fatal("Err reported the end but Done is not closed")
			}
		})
	}
}

// pausedKeepAliveEnv makes the paused holder (PausedHolderHelper) renew
// its lock with a KeepAlive and check the keep-alive's context.
const pausedKeepAliveEnv = "RESPIRE_LEASE_PAUSED_KEEPALIVE"

// pausedKeepAliveHolder is PausedHolderHelper with a KeepAlive: it takes a
// 500 ms lock on the sim node at addr, starts a KeepAlive, prints HELD, then
// does units of work while KeepAlive.Context().Err() and KeepAlive.Err()
// are nil, reading the monotonic clock before each check. A check that
// says held after a gap of more than twice the lease since the one before
// is printed as VIOLATION: the process was stopped meanwhile (nothing else
// keeps this loop from running that long), no renewal could go out during
// the pause, and none is sent once the lease's deadline has passed, so the
// lease ended before that check. The keep-alive's end is printed as ENDED.
func pausedKeepAliveHolder(t *testing.T, tr Transport, addr string) {
	const ttl = 500 * time.Millisecond
	locks := newLocks(t, tr, clientOf([]string{addr}, "", simPassword, false), lease.WithoutPush())
	lock, err := locks.Acquire(ctxT(t), "paused", ttl)
	if err != nil {
		t.Fatal(err)
	}
	keepAlive, err := lock.KeepAlive(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	work := keepAlive.Context()
	os.Stdout.WriteString("HELD\n")
	prev := time.Now()
	for units := 0; ; units++ {
		now := time.Now()
		ctxErr, kaErr := work.Err(), keepAlive.Err()
		if ctxErr != nil || kaErr != nil {
			fmt.Printf("ENDED after %d units: %v / %v\n", units, context.Cause(work), kaErr)
			return
		}
		if gap := now.Sub(prev); gap > 2*ttl {
			fmt.Printf("VIOLATION: unit %d: the keep-alive says held after a pause of %v, past the %v lease\n", units, gap, ttl)
		}
		prev = now
	}
}

// TestLeaseContextErrIsExact_APausedKeepAliveHolderSeesTheEndOnItsFirstCheck:
// a holder process checking its KeepAlive's context in a tight loop is
// stopped (SIGSTOP) for 1.5 s, past its 500 ms lease, and resumed
// (SIGCONT). Its very first check after the resume must see the lease's
// end, whichever goroutine the runtime schedules first: the keep-alive's
// context is exact like the lock's.
func caseLeaseContextErrIsExact_APausedKeepAliveHolderSeesTheEndOnItsFirstCheck(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	for run := range 3 {
		cmd := exec.Command(os.Args[0], runFlag(t, "LeaseContextErrIsExact_APausedKeepAliveHolderSeesTheEndOnItsFirstCheck", "PausedHolderHelper"),
			"-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), pausedHolderEnv+"="+srv.Addr(), pausedKeepAliveEnv+"=1", "GOMAXPROCS=1")
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
		time.Sleep(600 * time.Millisecond) // a renewal or two went out: the keep-alive runs
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
			t.Fatalf("run %d: the resumed holder's keep-alive said held past its lease:\n%s", run, text)
		}
		srv.Exec("DEL", "paused")
	}
}

func init() {
	register(
		Case{"LeaseContextErrIsExact_KeepAliveAfterAPausePastTheLease", caseLeaseContextErrIsExact_KeepAliveAfterAPausePastTheLease},
		Case{"LeaseContextErrIsExact_APausedKeepAliveHolderSeesTheEndOnItsFirstCheck", caseLeaseContextErrIsExact_APausedKeepAliveHolderSeesTheEndOnItsFirstCheck},
	)
}
