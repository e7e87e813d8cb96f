package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/sim"
)

// TestDeadlineLossSaysWhy_EveryRenewalAnsweredReadOnly: the node turns
// replica under a keep-alive (REPLICAOF): every renewal is answered
// READONLY, is retried (it did not run), and the lease ends at its
// deadline. The cause must say READONLY, not only that the deadline
// passed (sim node, manual clock).
func TestDeadlineLossSaysWhy_EveryRenewalAnsweredReadOnly(t *testing.T) {
	srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Match: hasIFEQ,
		Error: "READONLY You can't write against a read only replica.", Times: 1 << 30})
	work := lock.Context()
	for i := 0; work.Err() == nil && i < 100_000; i++ {
		clock.Advance(10 * time.Millisecond)
		// A renewal sent now disarms its timer until its completion, stepped on
		// another goroutine, arms the retry: wait for that before moving on.
		eventually(t, "the renewal's completion", func() bool { return lock.core().Driver().ArmedTimers() == 2 || lock.State() != StateHeld })
	}
	waitDone(t, work)
	assertDeadlineLossSaysReadOnly(t, context.Cause(work))
}

// TestDeadlineLossSaysWhy_ARealReplicaOfMidRun: the same on a private real
// redis-server 7.0 made a replica (of a node that is not there) while a
// keep-alive lock is held.
func TestDeadlineLossSaysWhy_ARealReplicaOfMidRun(t *testing.T) {
	srv := realserver.StartPrivate(t)
	locks := newLocks(t, newClient(t, []string{srv.Addr}, "", srv.Password, false), WithoutPush())
	lock, err := locks.Acquire(ctxT(t), "k", time.Second, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	if reply, err := srv.Exec("REPLICAOF", "127.0.0.1", "1"); err != nil || reply != "+OK\r\n" {
		t.Fatalf("REPLICAOF = %q, %v", reply, err)
	}
	work := lock.Context()
	waitDone(t, work)
	assertDeadlineLossSaysReadOnly(t, context.Cause(work))
}

func assertDeadlineLossSaysReadOnly(t *testing.T, cause error) {
	t.Helper()
	var loss *LossError
	if !errors.As(cause, &loss) || loss.Reason != LossDeadline && loss.Reason != LossDeadlineInFlight {
		t.Fatalf("cause = %v; want a deadline LossError", cause)
	}
	if !strings.Contains(cause.Error(), "READONLY") || !errors.Is(cause, ErrDidNotRun) {
		t.Fatalf("cause = %q; want it to carry the renewals' READONLY (matching ErrDidNotRun)", cause)
	}
}
