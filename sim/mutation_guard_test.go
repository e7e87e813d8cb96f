//go:build respire_mutation_guard

package sim_test

import (
	"testing"

	"github.com/respire-go/respire/sim/dst"
)

// TestNoGuardedWriteAfterTakeover_TheSimulatorCatchesTheGuardMutation:
// built with -tags respire_mutation_guard, conn's guarded-write scripts
// skip their ownership check (conn/mutation_guard_on.go); the
// deterministic simulator, which runs them under the shipped driver, must
// catch a guarded write landing while its token does not hold the key
// (invariant 14) within 1,000 schedules (make dst-mutation, part of make
// test).
func TestNoGuardedWriteAfterTakeover_TheSimulatorCatchesTheGuardMutation(t *testing.T) {
	const budget = 1000
	for seed := uint64(1); seed <= budget; seed++ {
		r := dst.Run(dst.Swarm(seed))
		if !r.Failed() {
			continue
		}
		if v := r.Violations[0]; v.Invariant != 14 {
			t.Fatalf("seed %d broke invariant %d, not 14 (a guarded write while not the owner):\n%s", seed, v.Invariant, r.Report())
		}
		t.Logf("caught at seed %d: %s\n  replay: %s", seed, r.Violations[0], r.Replay())
		return
	}
	t.Fatalf("the guard mutation survived %d schedules: the simulator does not judge guarded writes", budget)
}
