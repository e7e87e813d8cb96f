package statemachine

import (
	"errors"
	"testing"
	"time"
)

var (
	errTimeout = errors.New("i/o timeout")
	errNoPerm  = errors.New("NOPERM denied")
)

// coverage records every (from, event) pair walked through Step by any test.
var coverage = map[[2]uint8]bool{}

// driver feeds one Handle with a virtual clock and records effects.
type driver struct {
	t      *testing.T
	h      Handle
	now    time.Duration
	caller CallerID
	last   []Effect
	drift  *Drift // InputAcquire's, passed with every later input (as a runtime does)
}

func newDriver(t *testing.T) *driver { return &driver{t: t, now: time.Second} }

func (d *driver) newCaller() CallerID { d.caller++; return d.caller }

func (d *driver) step(in Input) []Effect {
	d.t.Helper()
	in.Now = d.now
	d.drift, in.Drift = sameDrift(d.drift, in)
	d.last = d.h.Step(in, nil)
	for _, e := range d.last {
		if e.Kind == EffectTransition {
			coverage[[2]uint8{uint8(e.From), uint8(e.Event)}] = true
		}
	}
	return d.last
}

func (d *driver) advance(by time.Duration) { d.now += by }

// acquired returns a driver whose handle holds a lease of ttl (optionally with keep-alive).
func acquired(t *testing.T, ttl time.Duration, keepAlive bool) *driver {
	d := newDriver(t)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputAcquire, Caller: c, TTL: ttl, KeepAlive: keepAlive})
	op := find(t, eff, EffectSendAcquire).Op
	d.step(Input{Kind: InputCommandDone, Op: op, Outcome: OutcomeOK})
	if d.h.State() != Held {
		t.Fatalf("state = %s; want Held", d.h.State())
	}
	return d
}

func (d *driver) done(op OpID, o Outcome, err error) []Effect {
	return d.step(Input{Kind: InputCommandDone, Op: op, Outcome: o, Err: err})
}

func (d *driver) reset(ttl time.Duration) (CallerID, []Effect) {
	c := d.newCaller()
	return c, d.step(Input{Kind: InputResetExpiry, Caller: c, TTL: ttl})
}

func (d *driver) release() (CallerID, []Effect) {
	c := d.newCaller()
	return c, d.step(Input{Kind: InputRelease, Caller: c})
}

func (d *driver) fire(timer Timer, eff []Effect) []Effect {
	d.t.Helper()
	arm := findTimer(d.t, eff, timer)
	d.now = arm.At
	return d.step(Input{Kind: InputTimer, Timer: timer, Seq: arm.Seq})
}

func find(t *testing.T, eff []Effect, k EffectKind) Effect {
	t.Helper()
	for _, e := range eff {
		if e.Kind == k {
			return e
		}
	}
	t.Fatalf("no effect of kind %d in %+v", k, eff)
	return Effect{}
}

func has(eff []Effect, k EffectKind) bool {
	for _, e := range eff {
		if e.Kind == k {
			return true
		}
	}
	return false
}

func findTimer(t *testing.T, eff []Effect, timer Timer) Effect {
	t.Helper()
	for i := len(eff) - 1; i >= 0; i-- {
		if eff[i].Kind == EffectArmTimer && eff[i].Timer == timer {
			return eff[i]
		}
	}
	t.Fatalf("timer %d not armed in %+v", timer, eff)
	return Effect{}
}

func resultOf(t *testing.T, eff []Effect, c CallerID) Result {
	t.Helper()
	for _, e := range eff {
		if e.Kind == EffectResolve && e.Caller == c {
			return e.Result
		}
	}
	t.Fatalf("caller %d not resolved in %+v", c, eff)
	return Result{}
}

func resolved(eff []Effect, c CallerID) bool {
	for _, e := range eff {
		if e.Kind == EffectResolve && e.Caller == c {
			return true
		}
	}
	return false
}

func count(eff []Effect, k EffectKind) int {
	n := 0
	for _, e := range eff {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// index returns the position of the first effect of kind k, or -1.
func index(eff []Effect, k EffectKind) int {
	for i, e := range eff {
		if e.Kind == k {
			return i
		}
	}
	return -1
}

// sameDrift returns the drift a handle's inputs carry: InputAcquire's,
// then the same with every later input (Input.Drift).
func sameDrift(drift *Drift, in Input) (kept, passed *Drift) {
	if in.Kind == InputAcquire {
		return in.Drift, in.Drift
	}
	return drift, drift
}
