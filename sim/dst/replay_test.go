package dst

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestSeededSchedules_AFailureNamesTheCommandThatReplaysIt: a failing
// schedule's report carries one line, "replay: <command>", with the one
// command that replays it: the TestSimulate line for Swarm's options (with
// the mutation flag of a broken variant), the test's own line for options
// a test made itself — never the Swarm line for options Swarm would not
// give, which would replay another schedule.
func TestSeededSchedules_AFailureNamesTheCommandThatReplaysIt(t *testing.T) {
	var failing Result
	for seed := uint64(1); seed <= 200 && !failing.Failed(); seed++ {
		opt := Swarm(seed)
		opt.Mutation = MutationSkipFence
		failing = Run(opt)
	}
	if !failing.Failed() {
		t.Fatal("MutationSkipFence was not caught in 200 schedules")
	}
	want := ReplayCommand(failing.Seed) + " -sim.mutation=3"
	if got := failing.Replay(); got != want {
		t.Fatalf("Swarm(%d) with a mutation: replay %q, want %q", failing.Seed, got, want)
	}
	if !strings.Contains(want, "-seed=") || strings.Contains(want, "\n") {
		t.Fatalf("replay command %q is not one line naming the seed", want)
	}
	if report := failing.Report(); !strings.Contains(report, "\nreplay: "+want+"\n") {
		t.Fatalf("the report has no replay line %q:\n%s", want, report)
	}

	own := Swarm(failing.Seed)
	own.Mutation, own.Processes = MutationSkipFence, own.Processes+1 // no longer Swarm's
	if r := Run(own); r.Replay() == failing.Replay() {
		t.Fatalf("options Swarm does not give replay with Swarm's command %q", r.Replay())
	}
	own.Rerun = rerun(t)
	if r := Run(own); r.Replay() != own.Rerun {
		t.Fatalf("options with Rerun %q replay with %q", own.Rerun, r.Replay())
	}
}

// TestSeededSchedules_APrimitivesScheduleReplaysByteForByte: a schedule
// with the semaphore and the read/write lock is a function of its seed too
// — two runs give the same transcript, steps and violations — and a
// failing one (a writer that ignores the readers) names the TestSimulate
// line, with the mutation flag, that replays it.
func TestSeededSchedules_APrimitivesScheduleReplaysByteForByte(t *testing.T) {
	checked := 0
	for seed := uint64(1); seed <= 40; seed++ {
		opt := Swarm(seed)
		if !opt.Primitives {
			continue
		}
		opt.Transcript = true
		a, b := Run(opt), Run(opt)
		if a.Transcript == "" || a.Transcript != b.Transcript || a.Steps != b.Steps || a.Stats != b.Stats {
			t.Fatalf("seed %d: two runs of a primitives schedule differ", seed)
		}
		if strings.Contains(a.Transcript, "{s1}:sem") && strings.Contains(a.Transcript, "{rw1}:") {
			checked++ // both primitives on the wire
		}
	}
	if checked < 10 {
		t.Fatalf("only %d of Swarm's seeds 1-40 ran both the semaphore's and the read/write lock's scripts", checked)
	}
	var failing Result
	for seed := uint64(1); seed <= 200 && !failing.Failed(); seed++ {
		opt := Swarm(seed)
		opt.Mutation = MutationWriterIgnoresReaders
		failing = Run(opt)
	}
	if !failing.Failed() || !failing.Options.Primitives {
		t.Fatalf("MutationWriterIgnoresReaders was not caught in a primitives schedule of seeds 1-200")
	}
	want := ReplayCommand(failing.Seed) + " -sim.mutation=" + strconv.Itoa(int(MutationWriterIgnoresReaders))
	if got := failing.Replay(); got != want {
		t.Fatalf("Swarm(%d) with a mutation: replay %q, want %q", failing.Seed, got, want)
	}
	again := Swarm(failing.Seed)
	again.Mutation = MutationWriterIgnoresReaders
	if r := Run(again); !reflect.DeepEqual(r.Violations, failing.Violations) {
		t.Fatalf("seed %d replayed with other violations: %v, first %v", failing.Seed, r.Violations, failing.Violations)
	}
}
