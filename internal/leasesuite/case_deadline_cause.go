package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/lease"
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
func caseDeadlineLossSaysWhy_EveryRenewalAnsweredReadOnly(t *testing.T, tr Transport) {
	srv, clock, lock := acquireWithClock(t, tr, 10*time.Second, lease.WithKeepAlive())
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Match: hasIFEQ,
		Error: "READONLY You can't write against a read only replica.", Times: 1 << 30})
	work := lock.Context()
	for i := 0; work.Err() == nil && i < 100_000; i++ {
		clock.Advance(10 * time.Millisecond)
		// A renewal sent now disarms its timer until its completion, stepped on
		// another goroutine, arms the retry: wait for that before moving on.
		eventually(t, "the renewal's completion", func() bool { return coreOf(lock).Driver().ArmedTimers() == 2 || lock.State() != lease.StateHeld })
	}
	waitDone(t, work)
	assertDeadlineLossSaysReadOnly(t, context.Cause(work))
}

// TestDeadlineLossSaysWhy_ARealReplicaOfMidRun: the same on a private real
// redis-server 7.0 made a replica (of a node that is not there) while a
// keep-alive lock is held.
func caseDeadlineLossSaysWhy_ARealReplicaOfMidRun(t *testing.T, tr Transport) {
	srv := realserver.StartPrivate(t)
	locks := newLocks(t, tr, clientOf([]string{srv.Addr}, "", srv.Password, false), lease.WithoutPush())
	lock, err := locks.Acquire(ctxT(t), "k", time.Second, lease.WithKeepAlive())
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
	var loss *lease.LossError
	if !errors.As(cause, &loss) || loss.Reason != lease.LossDeadline && loss.Reason != lease.LossDeadlineInFlight {
		t.Fatalf("cause = %v; want a deadline LossError", cause)
	}
	if !strings.Contains(cause.Error(), "READONLY") || !errors.Is(cause, lease.ErrDidNotRun) {
		t.Fatalf("cause = %q; want it to carry the renewals' READONLY (matching ErrDidNotRun)", cause)
	}
}

func init() {
	register(
		Case{"DeadlineLossSaysWhy_EveryRenewalAnsweredReadOnly", caseDeadlineLossSaysWhy_EveryRenewalAnsweredReadOnly},
		Case{"DeadlineLossSaysWhy_ARealReplicaOfMidRun", caseDeadlineLossSaysWhy_ARealReplicaOfMidRun},
	)
}
