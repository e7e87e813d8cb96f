//go:build respire_mutation_renewal

package sim_test

import (
	"testing"

	"github.com/respire-go/respire/sim/dst"
)

// TestSimulatorRunsTheShippedDriver_CatchesTheDriversRenewalMutation: built
// with -tags respire_mutation_renewal, the driver production runs ignores
// its renewals' answers (actor/mutation_on.go); the
// deterministic simulator, which runs that very driver, must catch it
// within 1,000 schedules (make dst-mutation, part of make test).
func TestSimulatorRunsTheShippedDriver_CatchesTheDriversRenewalMutation(t *testing.T) {
	const budget = 1000
	for seed := uint64(1); seed <= budget; seed++ {
		if r := dst.Run(dst.Swarm(seed)); r.Failed() {
			t.Logf("caught at seed %d: %s\n  replay: %s", seed, r.Violations[0], r.Replay())
			return
		}
	}
	t.Fatalf("the driver's renewal mutation survived %d schedules: the simulator does not run the driver's renewals", budget)
}
