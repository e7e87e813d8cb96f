//go:build respire_mutation_fairhead

package sim_test

import (
	"testing"

	"github.com/respire-go/respire/sim/dst"
)

// TestSimulatorChecksFairWaiting_CatchesTheFairHeadMutation: built with
// -tags respire_mutation_fairhead, the fair queue's scripts grant the lock
// to the waiter behind the head (conn/mutation_fairhead_on.go); the
// deterministic simulator, which runs those scripts under the shipped
// driver, must catch it by invariant 15 (grant order is ticket order)
// within 1,000 schedules (make dst-mutation, part of make test).
func TestSimulatorChecksFairWaiting_CatchesTheFairHeadMutation(t *testing.T) {
	const budget = 1000
	for seed := uint64(1); seed <= budget; seed++ {
		r := dst.Run(dst.Swarm(seed))
		if !r.Failed() {
			continue
		}
		if v := r.Violations[0]; v.Invariant != 15 {
			t.Fatalf("seed %d broke invariant %d, not 15 (ticket order):\n%s", seed, v.Invariant, r.Report())
		}
		t.Logf("caught at seed %d: %s\n  replay: %s", seed, r.Violations[0], r.Replay())
		return
	}
	t.Fatalf("the fair-head mutation survived %d schedules: the simulator does not check the grant order", budget)
}
