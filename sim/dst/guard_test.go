package dst

import (
	"testing"

	"github.com/respire-go/respire/conn"
)

// TestNoGuardedWriteAfterTakeover_GuardedSchedulesBreakNoInvariant: the
// schedules with guarded writes among the first seeds run the shipped
// driver's Lock.Guard through faults (lost replies settled by the
// write-id record, refusals ending handles, pauses, failovers, slot moves)
// and break no invariant; among them servers ran guard scripts for a token
// that no longer held its key — each refused, as invariant 14 requires.
func TestNoGuardedWriteAfterTakeover_GuardedSchedulesBreakNoInvariant(t *testing.T) {
	if conn.MutationGuard {
		t.Skip("built with respire_mutation_guard: see TestNoGuardedWriteAfterTakeover_TheSimulatorCatchesTheGuardMutation")
	}
	var total Stats
	for seed := uint64(1); seed <= 400; seed++ {
		opt := Swarm(seed)
		if !opt.Guarded {
			continue
		}
		r := Run(opt)
		if r.Failed() {
			opt.Transcript = true
			t.Fatalf("%s", Run(opt).Report())
		}
		total.Add(r.Stats)
	}
	if total.GuardedWrites == 0 || total.StaleGuards == 0 || total.GuardRefusals == 0 || total.GuardNotWritten == 0 {
		t.Fatalf("the guarded schedules of seeds 1-400 did not exercise the guard: %+v", total)
	}
	t.Logf("%d guarded schedules: %d writes ran, %d refused, %d settled as not run, %d unknown, %d stale scripts refused by the servers",
		total.GuardedSchedules, total.GuardedWrites, total.GuardRefusals, total.GuardNotWritten, total.GuardUnknown, total.StaleGuards)
}
