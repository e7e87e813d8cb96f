//go:build respire_mutation_semlimit

package sim_test

import (
	"testing"

	"github.com/respire-go/respire/sim/dst"
)

// TestSimulatorChecksThePrimitives_CatchesTheSemaphoreLimitMutation: built
// with -tags respire_mutation_semlimit, every permit acquisition conn
// builds asks the server for one permit more than its limit
// (conn/mutation_semlimit_on.go); the deterministic simulator, which runs
// those scripts under the shipped driver, must catch it by invariant 10
// (over the limit) within 1,000 schedules (make dst-mutation, part of make
// test).
func TestSimulatorChecksThePrimitives_CatchesTheSemaphoreLimitMutation(t *testing.T) {
	const budget = 1000
	for seed := uint64(1); seed <= budget; seed++ {
		r := dst.Run(dst.Swarm(seed))
		if !r.Failed() {
			continue
		}
		if v := r.Violations[0]; v.Invariant != 10 {
			t.Fatalf("seed %d broke invariant %d, not 10 (over the limit):\n%s", seed, v.Invariant, r.Report())
		}
		t.Logf("caught at seed %d: %s\n  replay: %s", seed, r.Violations[0], r.Replay())
		return
	}
	t.Fatalf("the semaphore-limit mutation survived %d schedules: the simulator does not check the limit", budget)
}
