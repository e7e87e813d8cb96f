package dst

import "testing"

// TestSimulatorChecksFairWaiting_SchedulesExerciseFairQueues: the fair
// schedules among Swarm's seeds 1-300 (one primitives schedule in three
// waits fairly) queue waiters, grant the lock to them and break neither
// invariant 15 (grant order is ticket order) nor 16 (no lost wake-up), nor
// any other, on the shipped driver over the shipped engine.
func TestSimulatorChecksFairWaiting_SchedulesExerciseFairQueues(t *testing.T) {
	var total Stats
	schedules := 0
	for seed := uint64(1); seed <= 300; seed++ {
		opt := Swarm(seed)
		if opt.FairPercent == 0 {
			continue
		}
		schedules++
		r := Run(opt)
		if r.Failed() {
			opt.Transcript = true
			t.Fatalf("seed %d:\n%s", seed, Run(opt).Report())
		}
		total.Add(r.Stats)
	}
	if schedules < 20 || total.FairWaits == 0 || total.FairQueued == 0 || total.FairGrants == 0 {
		t.Fatalf("the fair schedules of seeds 1-300 (%d) did not exercise fair waiting: %+v", schedules, total)
	}
	t.Logf("%d fair schedules: %d fair waits, %d queued answers, %d grants judged", schedules,
		total.FairWaits, total.FairQueued, total.FairGrants)
}
