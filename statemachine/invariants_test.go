package statemachine

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// step feeds in and checks every invariant on the effects.
func (x *explorer) step(in Input) {
	x.t.Helper()
	in.Now = x.now
	if in.Kind == InputTimer && x.timers[in.Timer] == in.Seq {
		delete(x.timers, in.Timer)
	}
	if in.Kind == InputCommandDone {
		delete(x.inFlight, in.Op)
	}
	x.drift, in.Drift = sameDrift(x.drift, in)
	state := x.h.State()
	x.buf = x.h.Step(in, x.buf[:0])
	fenced, cancelled := false, false
	for _, e := range x.buf {
		switch e.Kind {
		case EffectTransition:
			if e.From != state {
				x.t.Fatalf("transition from %s while in %s", e.From, state)
			}
			x.looplab(e.From, e.Event, e.To)
			x.edgesSeen[[2]uint8{uint8(e.From), uint8(e.Event)}] = true
			state = e.To
		case EffectSendRenew:
			x.expect(state == Held || state == Recovering, "renew sent while %s", state)
			x.expect(!x.hasKind(EffectSendRenew), "two renewals in flight")
			x.inFlight[e.Op] = e.Kind
		case EffectSendRelease:
			x.expect(state == Releasing, "release sent while %s", state)
			x.expect(!x.hasKind(EffectSendRelease), "two deletes in flight")
			x.inFlight[e.Op] = e.Kind
		case EffectSendAcquire:
			x.inFlight[e.Op] = e.Kind
		case EffectFence:
			fenced = true
			x.fences = append(x.fences, e.Op)
		case EffectCancelKeepAlive:
			x.expect(!fenced, "keep-alive cancelled after the fence")
			x.expect(!cancelled, "keep-alive cancelled twice in one step")
			cancelled = true
		case EffectArmTimer:
			if old, ok := x.timers[e.Timer]; ok {
				x.oldSeqs = append(x.oldSeqs, old)
			}
			x.timers[e.Timer] = e.Seq
			x.timerAt[e.Timer] = e.At
		case EffectDisarmTimer:
			if old, ok := x.timers[e.Timer]; ok {
				x.oldSeqs = append(x.oldSeqs, old)
			}
			delete(x.timers, e.Timer)
		case EffectResolve:
			x.expect(!x.resolved[e.Caller], "caller %d resolved twice", e.Caller)
			x.resolved[e.Caller] = true
			delete(x.waiting, e.Caller)
		}
	}
	x.expect(state == x.h.State(), "transitions end in %s, handle in %s", state, x.h.State())
	x.expect(x.h.State() == Held || x.h.State() == Recovering || x.h.RemainingEstimate(x.now) == 0,
		"remaining > 0 while %s", x.h.State())
	if in.Kind >= InputResetExpiry && in.Kind <= InputClose || in.Kind == InputObserve {
		x.expect(x.h.RemainingEstimate(x.now) > 0 || (x.h.State() != Held && x.h.State() != Recovering),
			"still %s after a request although the estimate ran out", x.h.State())
	}
	x.expect(!x.h.State().Terminal() || len(x.timers) == 0, "timers armed in terminal %s", x.h.State())
}

func (x *explorer) hasKind(k EffectKind) bool {
	for _, kind := range x.inFlight {
		if kind == k {
			return true
		}
	}
	return false
}

func (x *explorer) expect(ok bool, format string, args ...any) {
	x.t.Helper()
	if !ok {
		x.t.Fatalf("seed %d: "+format, append([]any{x.seed}, args...)...)
	}
}

// drain completes everything still in flight, then checks every caller was answered.
func (x *explorer) drain() {
	for i := 0; i < 1000 && (len(x.inFlight) > 0 || len(x.fences) > 0); i++ {
		if op, ok := x.pickOp(); ok {
			x.step(x.completion(op))
			continue
		}
		op := x.fences[0]
		x.fences = x.fences[1:]
		x.step(Input{Kind: InputFenceDone, Op: op})
	}
	if x.h.KeepAliveActive() && (x.h.State() == Held || x.h.State() == Recovering) {
		return // a running keep-alive may keep callers (stoppers) legitimately waiting
	}
	for c := range x.waiting {
		x.expect(false, "caller %d never answered (state %s)", c, x.h.State())
	}
}

// TestPropertyRandomInputsKeepInvariantsAndWalkEveryEdge drives many seeded random
// schedules; it fails on any invariant violation and on any disagreement with looplab.
// The edges it walks count toward TestMain's check that every edge of the graph is walked
// by some test (rare edges have their own scenario tests).
func TestPropertyRandomInputsKeepInvariantsAndWalkEveryEdge(t *testing.T) {
	seen := map[[2]uint8]bool{}
	for seed := uint64(1); seed <= *propertySeeds; seed++ {
		x := newExplorer(t, seed, seen)
		for range *propertySteps {
			x.step(x.nextInput())
		}
		x.drain()
	}
	for pair := range seen {
		coverage[pair] = true
	}
	t.Logf("walked %d edges", len(seen))
}

// TestMain fails the package when, after a full run, an edge of the graph was never walked
// through Step by any test (the scenario tests and the property test together).
func TestMain(m *testing.M) {
	code := m.Run()
	if f := flag.Lookup("test.run"); code == 0 && f != nil && f.Value.String() == "" {
		for _, ed := range Graph() {
			for _, from := range ed.From {
				if !coverage[[2]uint8{uint8(from), uint8(ed.Event)}] {
					fmt.Fprintf(os.Stderr, "FAIL: edge %s -%s-> %s never walked through Step by any test\n", from, ed.Event, ed.To)
					code = 1
				}
			}
		}
	}
	os.Exit(code)
}

// Deeper search: go test ./statemachine -run Property -property.seeds=100000 -property.steps=150
var (
	propertySeeds = flag.Uint64("property.seeds", 20000, "seeds for the property test")
	propertySteps = flag.Int("property.steps", 60, "inputs per seed in the property test")
)
