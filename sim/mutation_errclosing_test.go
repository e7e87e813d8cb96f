//go:build respire_mutation_errclosing

package sim_test

import (
	"testing"

	"github.com/respire-go/respire/sim/dst"
)

// TestSimulatorRunsTheShippedEngine_CatchesTheEnginesErrClosingMutation:
// built with -tags respire_mutation_errclosing, the wire engine production
// runs takes an error of a connection it closed itself (a retired or
// fenced session) as "not submitted" (conn/mutation_on.go, in the engine's
// classification); the deterministic simulator, which runs that very
// engine over its simulated connections, must catch it within 1,000
// schedules (make dst-mutation, part of make test).
func TestSimulatorRunsTheShippedEngine_CatchesTheEnginesErrClosingMutation(t *testing.T) {
	const budget = 1000
	for seed := uint64(1); seed <= budget; seed++ {
		if r := dst.Run(dst.Swarm(seed)); r.Failed() {
			t.Logf("caught at seed %d: %s\n  replay: %s", seed, r.Violations[0], r.Replay())
			return
		}
	}
	t.Fatalf("the engine's ErrClosing mutation survived %d schedules: the simulator does not run the engine's classification", budget)
}
