package dst

import (
	"strings"
	"testing"

	"github.com/respire-go/respire/sim"
)

// TestSimulatorChecksThePrimitives_SchedulesExercisePermitsAndHolds: the
// primitives schedules of Swarm's first seeds break no invariant and take
// permits, read holds and write holds through the driver, with full
// semaphores, writers waiting on readers, crashed holders, and push for
// the members (their watchers track the sorted sets).
func TestSimulatorChecksThePrimitives_SchedulesExercisePermitsAndHolds(t *testing.T) {
	var total Stats
	for seed := uint64(1); seed <= 300; seed++ {
		opt := Swarm(seed)
		if !opt.Primitives {
			continue
		}
		r := Run(opt)
		if r.Failed() {
			opt.Transcript = true
			t.Fatalf("%s", Run(opt).Report())
		}
		total.Add(r.Stats)
	}
	if total.PrimitiveSchedules < 100 || total.PermitSchedules == 0 || total.RWSchedules == 0 || total.Writes == 0 ||
		total.WriterWaits == 0 || total.FullRefusals == 0 || total.Crashes == 0 || total.MemberWatchReads == 0 {
		t.Fatalf("the primitives schedules of seeds 1-300 did not exercise the primitives: %+v", total)
	}
	t.Logf("%+v", total)
}

// catch runs Swarm's primitives schedules of seeds 1..budget with mutation
// and reports the first violation of invariant want.
func catch(t *testing.T, mutation Mutation, want, budget int) {
	t.Helper()
	for seed := uint64(1); seed <= uint64(budget); seed++ {
		opt := Swarm(seed)
		if !opt.Primitives {
			continue
		}
		opt.Mutation = mutation
		if r := Run(opt); r.Failed() {
			if v := r.Violations[0]; v.Invariant == want {
				t.Logf("caught at seed %d: %s\n  replay: %s", seed, v, r.Replay())
				return
			}
			t.Fatalf("mutation %d: seed %d broke invariant %d, not %d:\n%s", mutation, seed, r.Violations[0].Invariant, want, r.Report())
		}
	}
	t.Fatalf("mutation %d survived %d seeds: invariant %d does not bite", mutation, budget, want)
}

// TestSimulatorChecksThePrimitives_CatchesAWriterIgnoringReaders: a write
// acquisition that does not look at the readers is caught by invariant 11.
func TestSimulatorChecksThePrimitives_CatchesAWriterIgnoringReaders(t *testing.T) {
	catch(t, MutationWriterIgnoresReaders, 11, 300)
}

// TestSimulatorChecksThePrimitives_CatchesACountedEndedLease: a permit
// acquisition that counts ended leases is caught by invariant 13.
func TestSimulatorChecksThePrimitives_CatchesACountedEndedLease(t *testing.T) {
	catch(t, MutationSemaphoreCountsEnded, 13, 600)
}

// TestSimulatorChecksThePrimitives_LivenessWithoutFaults: without faults
// every waiting acquirer of a permit or a read hold acquires (invariant 7)
// and every waiting writer gets in while the readers churn (invariant 12).
func TestSimulatorChecksThePrimitives_LivenessWithoutFaults(t *testing.T) {
	for _, p := range sim.Profiles {
		runScenario(t, 20, Options{Profile: p, Liveness: true, Processes: 4, Primitives: true, SemaphoreLimit: 2})
	}
}

// TestSimulatorChecksThePrimitives_CatchesAWriterGivingUp: writers that
// never wait for the readers are reported by invariant 12.
func TestSimulatorChecksThePrimitives_CatchesAWriterGivingUp(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		r := Run(Options{Seed: seed, Liveness: true, Processes: 4, Keys: 1, Primitives: true, giveUp: true})
		for _, v := range r.Violations {
			if v.Invariant == 12 && strings.Contains(v.Message, "writer") {
				t.Logf("seed %d: %s", seed, v)
				return
			}
		}
	}
	t.Fatal("writers that never wait were not reported by invariant 12")
}

// TestSimulatorChecksThePrimitives_CatchesAReaderAdmittedWhileAWriterWaits:
// readers that do not look at the writer key come in while a writer waits
// with its marker set, which invariant 12 reports in fault-free schedules.
func TestSimulatorChecksThePrimitives_CatchesAReaderAdmittedWhileAWriterWaits(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		r := Run(Options{Seed: seed, Liveness: true, Processes: 4, Primitives: true,
			Mutation: MutationReaderIgnoresWriter})
		for _, v := range r.Violations {
			if v.Invariant == 12 && strings.Contains(v.Message, "admitted while writer") {
				t.Logf("seed %d: %s", seed, v)
				return
			}
		}
	}
	t.Fatal("readers admitted while a writer waited were not reported by invariant 12")
}
