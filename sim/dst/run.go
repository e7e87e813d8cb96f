package dst

import (
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// CoreFactory builds the core of a new handle. DefaultCore is the
// production core (statemachine/).
type CoreFactory func(HandleInfo) Core

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

// ReplayCommand is the one command that replays seed exactly.
func ReplayCommand(seed uint64) string {
	return "go test ./sim -run TestSimulate -seed=" + strconv.FormatUint(seed, 10) + " -v"
}

// Replay is the command that replays this run: ReplayCommand, plus the
// mutation flag when the run used a deliberately broken variant.
func (r Result) Replay() string {
	if r.Options.Mutation == MutationNone {
		return ReplayCommand(r.Seed)
	}
	return ReplayCommand(r.Seed) + " -sim.mutation=" + strconv.Itoa(int(r.Options.Mutation))
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

// Run plays one schedule with newCore building every handle's core (nil
// means DefaultCore). It blocks until the schedule ends (no pending event,
// Options.Steps reached, or a violation) and never starts a goroutine.
func Run(opt Options, newCore CoreFactory) Result {
	if newCore == nil {
		newCore = DefaultCore
	}
	w := newWorld(opt.withDefaults(), newCore)
	stack := w.loop()
	w.stopTasks()
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

func newWorld(opt Options, newCore CoreFactory) *world {
	w := &world{opt: opt, rng: rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15)),
		newCore: newCore}
	w.trace.enabled = opt.Transcript
	w.check.expiry = map[string]time.Duration{}
	w.check.fenced = map[fenceKey]bool{}
	w.check.cleaned = map[string]string{}
	for i := range opt.Keys {
		w.keys = append(w.keys, "lock:"+strconv.Itoa(i+1))
	}
	w.owner, w.migrating = map[string]*node{}, map[string]*migration{}
	first := newNode(w, opt.Profile, w.nodeKeys())
	for _, k := range w.keys {
		w.owner[k] = first
	}
	w.trace.logf(w, nil, "", "seed %d: %d processes, keys %v, %s, drift ±%dppm, mutation %d",
		opt.Seed, opt.Processes, w.keys, opt.Profile, opt.DriftPPM, opt.Mutation)
	for i := range opt.Processes {
		p := newProcess(w, i)
		w.procs = append(w.procs, p)
		w.schedule(p, w.between(0, 5*time.Millisecond), func() { w.think(p) })
	}
	w.schedule(nil, w.between(0, 5*time.Millisecond), w.chaos)
	return w
}
