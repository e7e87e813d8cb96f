package dst

import (
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
