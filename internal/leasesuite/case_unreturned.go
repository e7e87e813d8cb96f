package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

// TestUnreturnedHandleEnds_AnAbandonedKeepAliveAcquisitionArmsNoRenewal is
// the audit of the other way a handle is made and not returned: a caller
// that gives up after the SET was sent, WithKeepAlive. The handle is
// abandoned (cleaned up) and its keep-alive never starts: no timer is
// armed, and past the renewal time nothing renews the key. (The keep-alive
// of coordination's not-replicated handle is covered in coordination.)
func caseUnreturnedHandleEnds_AnAbandonedKeepAliveAcquisitionArmsNoRenewal(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84, lease.WithoutPush())
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Gate: gate})
	ctx, cancel := context.WithCancel(ctxT(t))
	result := make(chan error, 1)
	go func() {
		attempt, err := locks.TryAcquire(ctx, "k", 10*time.Second, lease.WithKeepAlive())
		if attempt.Acquired() {
			t.Error("a handle was returned after the caller gave up")
		}
		result <- err
	}()
	waitLog(t, srv, isAcquire)
	cancel()
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire = %v; want context.Canceled", err)
	}
	close(gate)
	leaseinternal.Driver(locks).WaitIdle()
	leaseinternal.Driver(locks).WaitIdle() // the clean-up has its answer
	if n := leaseinternal.Driver(locks).ArmedTimers(); n != 0 {
		t.Fatalf("%d timers armed after the abandoned acquisition; want none (nothing may renew it)", n)
	}
	clock.Advance(time.Minute)
	for _, e := range srv.Log() {
		if isRenewal("k")(e) {
			t.Fatalf("renewal %q sent for a handle nobody received", e.Args)
		}
	}
}

// TestUnreturnedHandleEnds_ARefusedReleaseLeavesNoRenewalAndTheHandleEndsAtItsDeadline:
// a fenced acquisition WithKeepAlive whose WAIT counts too few replicas
// (coordination's not-replicated lock), and whose release is refused with
// NOREPLICAS: no Lock is returned, the keep-alive is stopped (only the
// deadline watch stays armed, no renewal), and when the lease estimate runs
// out the handle ends and leaves the push hub: nothing keeps it.
func caseUnreturnedHandleEnds_ARefusedReleaseLeavesNoRenewalAndTheHandleEndsAtItsDeadline(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	srv.Inject(sim.Fault{Kind: sim.ReplaceReply, Command: "WAIT", Reply: ":0\r\n"})
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "DELEX", Times: 1000,
		Error: "NOREPLICAS Not enough good replicas to write."})
	f := &actor.Fenced{CounterKey: "counter"}
	lock, err := leaseinternal.AcquireFenced(locks, ctxT(t), "TryAcquire", "k", 10*time.Second, f, lease.WithKeepAlive(),
		lease.WithReplicas(1, 10*time.Millisecond))
	if lock != nil || !errors.Is(err, actor.ErrNotReplicated) || !f.Reply.NotReplicated || f.Reply.Released {
		t.Fatalf("AcquireFenced = %v, %+v, %v; want no lock, not replicated, not released", lock, f.Reply, err)
	}
	m := leaseinternal.Driver(locks)
	m.WaitIdle()
	if n := m.ArmedTimers(); n != 1 {
		t.Fatalf("%d timers armed; want 1 (the deadline watch, no renewal)", n)
	}
	holders := func() bool { return m.PushKey("k").Holders > 0 }
	if !holders() {
		t.Fatal("the handle is not among the push hub's holders: the check below would prove nothing")
	}
	clock.Advance(estimateOf(10 * time.Second))
	eventually(t, "the handle ended at its deadline", func() bool { return m.ArmedTimers() == 0 && !holders() })
	for _, e := range srv.Log() {
		if isRenewal("k")(e) {
			t.Fatalf("renewal %q sent for a handle nobody received", e.Args)
		}
	}
}

func init() {
	register(
		Case{"UnreturnedHandleEnds_AnAbandonedKeepAliveAcquisitionArmsNoRenewal", caseUnreturnedHandleEnds_AnAbandonedKeepAliveAcquisitionArmsNoRenewal},
		Case{"UnreturnedHandleEnds_ARefusedReleaseLeavesNoRenewalAndTheHandleEndsAtItsDeadline", caseUnreturnedHandleEnds_ARefusedReleaseLeavesNoRenewalAndTheHandleEndsAtItsDeadline},
	)
}
