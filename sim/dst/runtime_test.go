package dst

import (
	"testing"
)

func TestSameSeedSameTranscript(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		opt := Swarm(seed)
		opt.Transcript = true
		a, b := Run(opt, newStandIn), Run(opt, newStandIn)
		if a.Transcript != b.Transcript {
			t.Fatalf("seed %d: transcripts differ", seed)
		}
		if len(a.Transcript) == 0 {
			t.Fatalf("seed %d: empty transcript", seed)
		}
	}
}

func TestStandInSchedules(t *testing.T) {
	bad := 0
	steps := 0
	for seed := uint64(1); seed <= 300; seed++ {
		r := Run(Swarm(seed), newStandIn)
		steps += r.Steps
		if r.Failed() && bad < 3 {
			bad++
			opt := Swarm(seed)
			opt.Transcript = true
			t.Logf("%s", Run(opt, newStandIn).Report())
		}
	}
	t.Logf("steps %d", steps)
}

func TestMachineSchedules(t *testing.T) {
	bad := 0
	steps := 0
	for seed := uint64(1); seed <= 300; seed++ {
		r := Run(Swarm(seed), nil)
		steps += r.Steps
		if r.Failed() && bad < 3 {
			bad++
			opt := Swarm(seed)
			opt.Transcript = true
			t.Errorf("%s", Run(opt, nil).Report())
		}
	}
	t.Logf("steps %d", steps)
}
