//go:build respire_mutation_handover

package sim_test

import (
	"testing"

	"github.com/respire-go/respire/sim/dst"
)

// TestPushHandsOverWithinOneLocks_TheSimulatorCatchesTheHandOverMutation:
// built with -tags respire_mutation_handover, the hand-over script hands
// the key over whoever holds it (conn/mutation_handover_on.go); the
// deterministic simulator, whose crowd workload (Options.Crowd) makes
// releases hand keys over, must catch it by invariant 2 (a command changed
// a key its token does not own) within 1,000 schedules (make dst-mutation,
// part of make test).
func TestPushHandsOverWithinOneLocks_TheSimulatorCatchesTheHandOverMutation(t *testing.T) {
	const budget = 1000
	for seed := uint64(1); seed <= budget; seed++ {
		r := dst.Run(dst.Swarm(seed))
		if !r.Failed() {
			continue
		}
		if v := r.Violations[0]; v.Invariant != 2 {
			t.Fatalf("seed %d broke invariant %d, not 2 (only the owner changes a key):\n%s", seed, v.Invariant, r.Report())
		}
		t.Logf("caught at seed %d: %s\n  replay: %s", seed, r.Violations[0], r.Replay())
		return
	}
	t.Fatalf("the hand-over mutation survived %d schedules: the simulator does not check the hand-over's compare", budget)
}
