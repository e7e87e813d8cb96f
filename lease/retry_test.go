package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// TestRenewalRetry_ARenewalThatDidNotRunIsRetriedWhileTheDeadlineLasts: a
// keep-alive renewal answered CLUSTERDOWN, TRYAGAIN, MASTERDOWN, LOADING,
// BUSY, NOREPLICAS or READONLY did not run; the keep-alive retries it (the
// deadline watch guards the lease) instead of giving the lock up.
func TestRenewalRetry_ARenewalThatDidNotRunIsRetriedWhileTheDeadlineLasts(t *testing.T) {
	for _, reply := range []string{
		"CLUSTERDOWN The cluster is down",
		"TRYAGAIN Multiple keys request during rehashing of slot",
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
		"LOADING Redis is loading the dataset in memory",
		"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
		"NOREPLICAS Not enough good replicas to write.",
		"READONLY You can't write against a read only replica.",
	} {
		t.Run(reply[:5], func(t *testing.T) {
			srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
			srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Match: hasIFEQ, Error: reply, Times: 2})
			clock.Advance(5 * time.Second)
			eventually(t, "two refused renewals, then a confirmed one", func() bool {
				clock.Advance(10 * time.Millisecond) // retries come an eighth of the time left later
				return len(srv.FaultLog()) == 2 && lock.RemainingEstimate() > estimateOf(10*time.Second)-time.Second
			})
			if err := lock.Context().Err(); err != nil {
				t.Fatalf("keep-alive ended: %v", context.Cause(lock.Context()))
			}
		})
	}
}

// TestRenewalRetry_APermanentRefusalStillEndsTheKeepAlive: NOPERM or
// WRONGTYPE will not change on a retry: the keep-alive ends at once with
// the failure.
func TestRenewalRetry_APermanentRefusalStillEndsTheKeepAlive(t *testing.T) {
	srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Match: hasIFEQ, Error: "WRONGTYPE Operation against a key holding the wrong kind of value"})
	clock.Advance(5 * time.Second)
	waitDone(t, lock.Context())
	var failure *RenewalFailureError
	if cause := context.Cause(lock.Context()); !errorsAs(cause, &failure) {
		t.Fatalf("cause %v; want a renewal failure", cause)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
