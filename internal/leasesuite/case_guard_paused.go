package leasesuite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// The guarded holder: this test binary run again with guardedHolderEnv set
// to the server's address (guardedHolderPwEnv its password), which runs
// GuardedHolderHelper alone. It takes {paused}:lock for 1 s on a manual
// clock that never moves — its estimate never runs out, as a process whose
// monotonic clock stood still through a pause (a suspended VM) or whose
// write is held up on the network past its lease —, writes owner=holder
// through a guarded write, prints HELD, and then for each line of its
// stdin: "guard" makes a guarded write of owner=holder-after-pause and
// prints "GUARD <ownership lost> <loss reason> <state>"; "naive" writes the
// same with a plain HSET on its own client and prints "NAIVE <err>". It
// exits when its stdin closes.
const (
	guardedHolderEnv   = "RESPIRE_GUARDED_HOLDER"
	guardedHolderPwEnv = "RESPIRE_GUARDED_HOLDER_PASSWORD"
	pausedLock         = "{paused}:lock"
	pausedData         = "{paused}:data"
)

// TestGuardedHolderHelper is the guarded holder's body (see above); in a
// normal run it skips.
func caseGuardedHolderHelper(t *testing.T, tr Transport) {
	addr := os.Getenv(guardedHolderEnv)
	if addr == "" {
		t.Skip("helper process of TestNoGuardedWriteAfterTakeover_APausedProcessIsRefused")
	}
	password := os.Getenv(guardedHolderPwEnv)
	locks := newLocks(t, tr, clientOf([]string{addr}, "", password, false), lease.WithoutPush())
	useClock(locks, &actor.ManualClock{})
	ctx := context.Background()
	lock, err := locks.Acquire(ctx, pausedLock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Guard(ctx, lease.Command("HSET", pausedData, "owner", "holder")); err != nil {
		t.Fatal(err)
	}
	fmt.Println("HELD")
	raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: password, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		switch lines.Text() {
		case "guard":
			err := lock.Guard(ctx, lease.Command("HSET", pausedData, "owner", "holder-after-pause"))
			var loss *lease.LossError
			reason := "none"
			if errors.As(err, &loss) {
				reason = loss.Reason.String()
			}
			fmt.Println("GUARD", errors.Is(err, lease.ErrOwnershipLost), reason, lock.State())
		case "naive":
			err := raw.Do(ctx, raw.B().Hset().Key(pausedData).FieldValue().FieldValue("owner", "holder-after-pause").Build()).Error()
			fmt.Println("NAIVE", err)
		}
	}
}

// TestNoGuardedWriteAfterTakeover_APausedProcessIsRefused: a real child
// process holds a 1 s lock and wrote through it; it is stopped (SIGSTOP)
// past its lease, the lease expires on the server and this process takes
// the lock. Resumed (SIGCONT), the child — whose estimate still says Held
// — makes a guarded write: the server refuses it (ErrOwnershipLost,
// LossGuardRefused, the child's lock Lost) and nothing is written; the
// same write made naively, with a plain HSET, lands. Run on a sim node on
// real time and on the real redis-server 7.0.
func caseNoGuardedWriteAfterTakeover_APausedProcessIsRefused(t *testing.T, tr Transport) {
	t.Run("sim", func(t *testing.T) {
		srv := startSim(t, sim.Config{Profile: sim.Valkey90})
		pausedTakeover(t, tr, srv, srv.Addr(), simPassword)
	})
	t.Run("real-redis-7.0", func(t *testing.T) {
		addr, password := realRedis70(t)
		realserver.Lock(t, addr)
		tg := startRealServer(t, addr, password)
		pausedTakeover(t, tr, tg, addr, password)
	})
}

// pausedTakeover runs the scenario against srv at addr.
func pausedTakeover(t *testing.T, tr Transport, srv wireServer, addr, password string) {
	cmd := exec.Command(os.Args[0], runFlag(t, "NoGuardedWriteAfterTakeover_APausedProcessIsRefused", "GuardedHolderHelper"),
		"-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), guardedHolderEnv+"="+addr, guardedHolderPwEnv+"="+password)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(out)
	expectLine(t, lines, "HELD")
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	locks := newLocks(t, tr, clientOf([]string{addr}, "", password, false))
	var taker *lease.Lock
	eventually(t, "the takeover after the paused holder's lease", func() bool {
		a, err := locks.TryAcquire(ctxT(t), pausedLock, time.Minute)
		taker = a.Lock()
		return err == nil && a.Acquired()
	})
	if err := taker.Guard(ctxT(t), lease.Command("HSET", pausedData, "owner", "taker")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	sendLine(t, stdin, "guard")
	if got := expectLine(t, lines, "GUARD"); got != "GUARD true guard-refused Lost" {
		t.Fatalf("the resumed holder's guarded write: %q; want refused (true guard-refused Lost)", got)
	}
	if owner := bare(srv.Exec("HGET", pausedData, "owner")); owner != "taker" {
		t.Fatalf("owner = %q after the refused write; want taker", owner)
	}
	sendLine(t, stdin, "naive")
	if got := expectLine(t, lines, "NAIVE"); got != "NAIVE <nil>" {
		t.Fatalf("the naive write: %q", got)
	}
	if owner := bare(srv.Exec("HGET", pausedData, "owner")); owner != "holder-after-pause" {
		t.Fatalf("owner = %q after the naive write; want holder-after-pause (the naive write lands)", owner)
	}
}

// expectLine returns the child's next line starting with prefix, skipping
// test-runner chatter, within 10 s.
func expectLine(t *testing.T, lines *bufio.Scanner, prefix string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), prefix) {
				got <- lines.Text()
				return
			}
		}
		got <- ""
	}()
	select {
	case line := <-got:
		if line == "" {
			t.Fatalf("the child exited before printing %s", prefix)
		}
		return line
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s line from the child within 10 s", prefix)
	}
	return ""
}

func sendLine(t *testing.T, w io.Writer, line string) {
	t.Helper()
	if _, err := io.WriteString(w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func init() {
	register(
		Case{"GuardedHolderHelper", caseGuardedHolderHelper},
		Case{"NoGuardedWriteAfterTakeover_APausedProcessIsRefused", caseNoGuardedWriteAfterTakeover_APausedProcessIsRefused},
	)
}
