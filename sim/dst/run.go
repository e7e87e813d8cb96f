package dst

import (
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Result is the outcome of one schedule.
type Result struct {
	Seed        uint64
	Options     Options       // as run, defaults filled in
	Steps       int           // scheduler steps taken
	VirtualTime time.Duration // virtual time at the end
	Handles     int           // handles created
	Stats       Stats         // what happened
	Violations  []Violation   // empty when every invariant held
	Transcript  string        // when Options.Transcript
	PanicStack  string        // the Go stack of a panic (invariant 0), not part of the transcript
}

// Failed reports whether an invariant broke.
func (r Result) Failed() bool { return len(r.Violations) > 0 }

// buildTags are the mutation build tags this binary was built with (see
// buildtag_*.go): a replay needs them too.
var buildTags []string

// ReplayCommand is the one command that replays seed exactly (with the
// build tags of a deliberately broken build, if this is one).
func ReplayCommand(seed uint64) string {
	tags := ""
	if len(buildTags) > 0 {
		tags = " -tags " + strings.Join(buildTags, ",")
	}
	return "go test" + tags + " ./sim -run '^TestSimulate$' -seed=" + strconv.FormatUint(seed, 10) + " -v"
}

// Replay is the one command that replays this run: ReplayCommand (plus
// the mutation flag when the run used a deliberately broken variant) for
// Swarm's options, else Options.Rerun.
func (r Result) Replay() string {
	if !r.swarm() {
		if r.Options.Rerun != "" {
			return r.Options.Rerun
		}
		return "(not Swarm's options, and no Options.Rerun: rerun the test that ran them)"
	}
	if r.Options.Mutation == MutationNone {
		return ReplayCommand(r.Seed)
	}
	return ReplayCommand(r.Seed) + " -sim.mutation=" + strconv.Itoa(int(r.Options.Mutation))
}

// swarm reports whether r ran Swarm(r.Seed)'s options (the mutation and
// the transcript aside), which ReplayCommand replays.
func (r Result) swarm() bool {
	want := Swarm(r.Seed).withDefaults()
	want.Mutation, want.Transcript, want.Rerun = r.Options.Mutation, r.Options.Transcript, r.Options.Rerun
	return r.Options == want
}

// Report is the failure message: seed, replay command, violations and, if
// kept, the transcript.
func (r Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d violation(s) after %d steps (%.3fms virtual)\n",
		r.Seed, len(r.Violations), r.Steps, float64(r.VirtualTime)/1e6)
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  %s\n", v)
	}
	fmt.Fprintf(&b, "replay: %s\n", r.Replay())
	if r.Transcript != "" {
		b.WriteString("transcript:\n")
		b.WriteString(r.Transcript)
	}
	if r.PanicStack != "" {
		b.WriteString("panic stack:\n")
		b.WriteString(r.PanicStack)
	}
	return b.String()
}

// Run plays one schedule: every process runs its own actor.Driver (the
// driver production runs) over the simulated transport. It blocks until
// the schedule ends (no pending event, Options.Steps reached, or a
// violation) and never starts a goroutine that outlives it (the tasks are
// coroutines of the calling goroutine, unwound at the end).
func Run(opt Options) Result {
	w := newWorld(opt.withDefaults())
	stack := w.loop()
	w.stopTasks()
	for _, p := range w.procs {
		ps := p.driver.PushStats()
		w.stats.HolderReads += ps.HolderReads
		w.stats.Refuted += ps.Refuted
		w.stats.HandOvers += ps.HandOvers
	}
	w.countPrimitiveSchedule()
	w.countPerCallerSchedule()
	if w.opt.Guarded {
		w.stats.GuardedSchedules = 1
	}
	return Result{Seed: opt.Seed, Options: w.opt, Steps: w.steps, VirtualTime: w.now,
		Handles: len(w.handles), Stats: w.stats, Violations: w.check.violations, Transcript: w.trace.String(),
		PanicStack: stack}
}

// loop runs the scheduler. A panic in the core or the runtime is a
// violation (invariant 0) of this seed, not a crash of the campaign.
func (w *world) loop() (stack string) {
	defer func() {
		if v := recover(); v != nil {
			stack = string(debug.Stack())
			if tp, ok := v.(taskPanic); ok {
				v, stack = tp.value, tp.stack
			}
			w.check.fail(w, 0, "panic: %v", v)
		}
	}()
	for w.steps < w.opt.Steps && !w.done {
		if !w.step() {
			break
		}
		w.steps++
		if !w.done {
			w.check.afterStep(w)
		}
	}
	return ""
}

func newWorld(opt Options) *world {
	w := &world{opt: opt, rng: rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15)), check: newChecker(),
		fairRng: rand.New(rand.NewPCG(opt.Seed, 0xfa1efa1e))}
	w.trace.enabled = opt.Transcript
	for i := range opt.Keys {
		w.keys = append(w.keys, "lock:"+strconv.Itoa(i+1))
	}
	w.owner, w.migrating = map[string]*node{}, map[string]*migration{}
	first := newNode(w, opt.Profile, w.nodeKeys())
	for _, k := range w.keys {
		w.owner[k] = first
	}
	if opt.Primitives {
		w.newPrimitives(first)
	}
	w.trace.logf(w, nil, "", "seed %d: %d processes, keys %v, %s, drift ±%dppm, push %v, command timeout %s, mutation %d",
		opt.Seed, opt.Processes, w.keys, opt.Profile, opt.DriftPPM, !opt.WithoutPush, opt.commandTimeout(), opt.Mutation)
	for i := range opt.Processes {
		p := newProcess(w, i)
		w.procs = append(w.procs, p)
		w.schedule(p, w.between(0, 5*time.Millisecond), func() { w.think(p) })
	}
	w.schedule(nil, w.between(0, 5*time.Millisecond), w.chaos)
	if !opt.WithoutPush {
		w.schedule(nil, w.between(0, 5*time.Millisecond), w.cron)
	}
	return w
}
