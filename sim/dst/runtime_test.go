package dst

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// Scenario tests: each pushes one fault to the extreme and checks that the
// real core keeps every invariant. They read as scripts: a goal, options, run.

// rerun is the command that replays t: its seeds run in order and it stops
// at the first failing one, so rerunning it replays that schedule.
func rerun(t *testing.T) string {
	return "go test ./sim/dst -run '^" + t.Name() + "$' -v"
}

func runScenario(t *testing.T, seeds int, opt Options) {
	t.Helper()
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		o := opt
		o.Seed, o.Rerun = seed, rerun(t)
		if r := Run(o); r.Failed() {
			o.Transcript = true
			t.Fatalf("%s", Run(o).Report())
		}
	}
}

// Goal: every reply is lost after the server ran the command, so every
// write is uncertain; nothing may be replayed and no handle may believe it
// holds a lease the server gave to someone else.
func TestScenarioEveryReplyLostAfterExecution(t *testing.T) {
	for _, p := range sim.Profiles {
		runScenario(t, 20, Options{Profile: p, DropAfterExecPercent: 100, Steps: 300})
	}
}

// Goal: every reply arrives after the command deadline (uncertain, then
// fenced); latent commands must not run after their fence.
func TestScenarioEveryReplyLate(t *testing.T) {
	for _, p := range sim.Profiles {
		runScenario(t, 20, Options{Profile: p, DelayReplyPercent: 100, Steps: 300})
	}
}

// Goal: users give up on most calls at every cancellable point, with writes
// waiting for in-flight capacity (so cancels land before and after the write).
func TestScenarioCancelEverywhere(t *testing.T) {
	runScenario(t, 40, Options{CancelPercent: 80, DelayWritePercent: 50, Processes: 3, Keys: 2})
}

// Goal: holders freeze (GC-style) for longer than their lease while others
// take the lock; the frozen holder must not believe it still holds it.
func TestScenarioHolderPausedLongerThanLease(t *testing.T) {
	runScenario(t, 40, Options{PauseProcessPercent: 20, DriftPPM: 20000})
}

// Goal: failovers to other profiles (capabilities change, scripts flushed,
// connections dropped), ACL denials and a slot move in one schedule.
func TestScenarioTopologyChurn(t *testing.T) {
	runScenario(t, 40, Options{FailoverPercent: 5, DenyACLPercent: 3, MoveSlotPercent: 10,
		PauseNodePercent: 3, Processes: 3, Keys: 2})
}

// Goal (invariant 7): without faults every waiting acquirer acquires.
func TestScenarioLivenessWithoutFaults(t *testing.T) {
	for _, p := range sim.Profiles {
		runScenario(t, 20, Options{Profile: p, Liveness: true, Processes: 4})
	}
}

// One seed → one PRNG → one clock → one trace.
func TestSameSeedSameTranscript(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		opt := Swarm(seed)
		opt.Transcript = true
		a, b := Run(opt), Run(opt)
		if a.Transcript == "" || a.Transcript != b.Transcript {
			t.Fatalf("seed %d: transcripts differ or are empty", seed)
		}
	}
}

// Transcripts never show owner tokens, not even inside server error texts.
func TestTranscriptRedactsTokens(t *testing.T) {
	opt := Options{Seed: 7, Profile: sim.Redis70, Transcript: true}
	r := Run(opt)
	if !strings.Contains(r.Transcript, "tok(p") {
		t.Fatalf("no redacted token in transcript:\n%s", r.Transcript)
	}
	for _, line := range strings.Split(r.Transcript, "\n") {
		if strings.Contains(line, "p1.1-") || strings.Contains(line, "p2.1-") {
			t.Fatalf("token leaked: %s", line)
		}
	}
}

func TestProcessClockRoundTrip(t *testing.T) {
	for _, ppm := range []int64{-20000, -1, 0, 1, 20000} {
		p := &process{driftPPM: ppm, offset: 123456789}
		for _, local := range []time.Duration{p.offset, p.offset + 1, p.offset + time.Millisecond, p.offset + 7*time.Second + 3} {
			at := p.trueAt(local)
			if p.local(at) < local || (at > 0 && p.local(at-1) >= local) {
				t.Fatalf("ppm %d: trueAt(%d) = %d, local(at) = %d", ppm, local, at, p.local(at))
			}
		}
	}
}

func TestParseReply(t *testing.T) {
	for _, tc := range []struct {
		wire string
		want conn.Reply
	}{
		{"+OK\r\n", conn.Reply{Kind: conn.ReplyStatus, Text: "OK"}},
		{":42\r\n", conn.Reply{Kind: conn.ReplyInt, Int: 42}},
		{"$-1\r\n", conn.Reply{Kind: conn.ReplyNil}},
		{"_\r\n", conn.Reply{Kind: conn.ReplyNil}},
		{"$3\r\na\r\n\r\n", conn.Reply{Kind: conn.ReplyBulk, Text: "a\r\n"}},
		{"-ERR syntax error\r\n", conn.Reply{Kind: conn.ReplyError, Text: "ERR syntax error"}},
		{"=15\r\ntxt:id=7 addr=x\r\n", conn.Reply{Kind: conn.ReplyBulk, Text: "id=7 addr=x"}},
		{",1.5\r\n", conn.Reply{Kind: conn.ReplyBulk, Text: "1.5"}},
		{"#t\r\n", conn.Reply{Kind: conn.ReplyInt, Int: 1}},
		{"*-1\r\n", conn.Reply{Kind: conn.ReplyNil}},
		{"*2\r\n:1\r\n*1\r\n$1\r\nk\r\n", conn.Reply{Kind: conn.ReplyArray, Array: []conn.Reply{
			{Kind: conn.ReplyInt, Int: 1}, {Kind: conn.ReplyArray, Array: []conn.Reply{{Kind: conn.ReplyBulk, Text: "k"}}}}}},
		{"%1\r\n+proto\r\n:3\r\n", conn.Reply{Kind: conn.ReplyArray, Array: []conn.Reply{
			{Kind: conn.ReplyStatus, Text: "proto"}, {Kind: conn.ReplyInt, Int: 3}}}},
		{"*2\r\n:1\r\n", conn.Reply{Kind: conn.ReplyError, Text: "ERR unparsable reply"}},
	} {
		if got := parseReply([]byte(tc.wire)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseReply(%q) = %+v; want %+v", tc.wire, got, tc.want)
		}
	}
}

// The checker's own table of fallback-confirming replies (rules
// ExtensionFallsBackOnlyOnSyntaxError, ReleaseFallsBackOnlyOnUnknownCommand), kept
// independent of conn's so a conn mistake cannot hide itself.
func TestCheckerConfirmingReplies(t *testing.T) {
	var k checker
	setIfeq := conn.Command{Args: []string{"SET", "k", "t", "IFEQ", "t", "PX", "10"}}
	delex := conn.Command{Args: []string{"DELEX", "k", "IFEQ", "t"}}
	evalsha := conn.Command{Args: []string{"EVALSHA", conn.ReleaseScriptSHA, "1", "k", "t"}}
	e := func(text string) conn.Reply { return conn.Reply{Kind: conn.ReplyError, Text: text} }
	for _, tc := range []struct {
		cmd  conn.Command
		r    conn.Reply
		want bool
	}{
		{setIfeq, e("ERR syntax error"), true},
		{setIfeq, e("ERR Syntax error"), false},
		{setIfeq, e("NOPERM User u has no permissions to run the 'set' command"), false},
		{delex, e("ERR unknown command 'DELEX', with args beginning with: 'k' "), true},
		{delex, e("ERR unknown command 'DELEX'"), false},
		{delex, e("ERR syntax error"), false},
		{evalsha, e("NOSCRIPT No matching script."), true},
		{evalsha, conn.Reply{Kind: conn.ReplyInt}, false},
		{delex, e("MOVED 1 10.0.1.2:6379"), true},
	} {
		if got := k.confirming(tc.cmd, tc.r); got != tc.want {
			t.Errorf("confirming(%s, %q) = %v; want %v", tc.cmd.Args[0], tc.r.Text, got, tc.want)
		}
	}
}

// Invariant 7 is not vacuous: acquirers that give up at the first
// contention (the workload's giveUp breaks waiting: every acquisition
// tries once) are reported in fault-free liveness schedules.
func TestLivenessCheckCatchesGivingUp(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		r := Run(Options{Seed: seed, Liveness: true, Processes: 3, giveUp: true})
		if r.Failed() && r.Violations[0].Invariant == 7 {
			t.Logf("seed %d: %s", seed, r.Violations[0])
			return
		}
	}
	t.Fatal("acquirers that never wait were not reported by invariant 7")
}
