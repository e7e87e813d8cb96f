package conn

import (
	"slices"
	"testing"

	"github.com/redis/rueidis"
)

// TestBuildStepSendsWhatCommandSays: the commands sessions build without a
// Command (buildStep) carry exactly the arguments of Operation.Command, for
// every step, TTL text reuse included, and are reported under the same
// command name.
func TestBuildStepSendsWhatCommandSays(t *testing.T) {
	var b rueidis.Builder
	for _, ms := range []int64{1, 99, 100, 30000, 30000, 60000, 1 << 40} {
		for step := StepSetIfeq; step <= StepAcquire; step++ {
			o := &Operation{key: "k:1", token: "tok", ttlMillis: ms, step: step}
			built := buildStep(b, o)
			got, want := built.Commands(), o.Command().Args
			if !slices.Equal(got, want) {
				t.Errorf("step %d, %d ms: built %q; Command says %q", step, ms, got, want)
			}
			if got, want := stepName(step), CommandName(o.Command()); got != want {
				t.Errorf("step %d is reported as %q; its command is %q", step, got, want)
			}
		}
	}
}
