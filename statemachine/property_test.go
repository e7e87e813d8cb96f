package statemachine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// explorer throws random valid inputs at one Handle and checks invariants after each Step.
type explorer struct {
	t         *testing.T
	seed      uint64
	rng       *rand.Rand
	h         Handle
	drift     *Drift // InputAcquire's, passed with every later input
	now       time.Duration
	caller    CallerID
	inFlight  map[OpID]EffectKind
	fences    []OpID
	timers    map[Timer]uint32
	timerAt   map[Timer]time.Duration
	oldSeqs   []uint32
	waiting   map[CallerID]bool
	resolved  map[CallerID]bool
	looplab   func(from State, e Event, to State)
	edgesSeen map[[2]uint8]bool
	buf       []Effect
	// calm seeds (every other one) rarely release and move time in small steps, so that a
	// keep-alive lives long enough to meet interrupted renewals, retries and recoveries
	calm bool
}

func newExplorer(t *testing.T, seed uint64, seen map[[2]uint8]bool) *explorer {
	f := NewFSM(Acquiring)
	return &explorer{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: time.Second,
		inFlight: map[OpID]EffectKind{}, timers: map[Timer]uint32{}, timerAt: map[Timer]time.Duration{},
		waiting: map[CallerID]bool{}, resolved: map[CallerID]bool{}, edgesSeen: seen, calm: seed%2 == 0,
		looplab: func(from State, e Event, to State) {
			f.SetState(from.String())
			if err := FireFSM(f, e); err != nil || f.Current() != to.String() {
				t.Fatalf("seed %d: looplab disagrees on %s -%s-> %s: %v (%s)", seed, from, e, to, err, f.Current())
			}
		},
	}
}

func (x *explorer) newCaller() CallerID {
	x.caller++
	x.waiting[x.caller] = true
	return x.caller
}

// nextInput picks a random input that is valid for the handle's state.
func (x *explorer) nextInput() Input {
	if x.rng.IntN(4) == 0 && !x.calm {
		x.now += time.Duration(x.rng.IntN(300)) * time.Millisecond
	} else {
		x.now += time.Duration(x.rng.IntN(10)) * time.Millisecond // most things happen close together
	}
	s := x.h.State()
	if s == Acquiring && len(x.inFlight) == 0 && x.caller == 0 {
		var drift *Drift
		if x.rng.IntN(2) == 0 {
			d := DefaultDrift()
			drift = &d
		}
		return Input{Kind: InputAcquire, Caller: x.newCaller(), TTL: x.ttl(), KeepAlive: x.calm || x.rng.IntN(2) == 0, Drift: drift}
	}
	returned := s != Acquiring && s != NotAcquired && s != Abandoned
	for {
		switch x.rng.IntN(14) {
		case 12:
			if returned && !x.calm && x.rng.IntN(8) == 0 {
				return Input{Kind: InputOwnerRefuted} // a read after a push found the key not ours
			}
			if returned && !x.calm && x.rng.IntN(8) == 0 {
				// a guarded write's script found the key not ours (or a larger fence)
				return Input{Kind: InputGuardRefused, StaleFence: x.rng.IntN(2) == 0}
			}
			if returned && x.rng.IntN(2) == 0 {
				return Input{Kind: InputObserve}
			}
			if returned {
				return Input{Kind: InputWatch}
			}
		case 0, 1, 2:
			if op, ok := x.pickOp(); ok {
				return x.completion(op)
			}
		case 3, 13:
			if len(x.fences) > 0 {
				op := x.fences[0]
				x.fences = x.fences[1:]
				var err error
				if x.rng.IntN(3) == 0 {
					err = fmt.Errorf("fence failed")
				}
				return Input{Kind: InputFenceDone, Op: op, Err: err}
			}
		case 4:
			if in, ok := x.timerFire(); ok {
				return in
			}
		case 5:
			if in, ok := x.cancelSomeone(); ok {
				return in
			}
		case 6:
			if returned {
				return Input{Kind: InputResetExpiry, Caller: x.newCaller(), TTL: x.ttl()}
			}
		case 7:
			if returned {
				return Input{Kind: InputKeepAliveStart, Caller: x.newCaller()}
			}
		case 8:
			if returned && (!x.calm || x.rng.IntN(10) == 0 || x.h.State() == Recovering) {
				return Input{Kind: InputKeepAliveStop, Caller: x.newCaller()}
			}
		case 9, 10:
			if returned && (!x.calm || x.rng.IntN(20) == 0) {
				return Input{Kind: InputRelease, Caller: x.newCaller()}
			}
		case 11:
			if returned && (!x.calm || x.rng.IntN(20) == 0) {
				return Input{Kind: InputClose, Caller: x.newCaller()}
			}
		}
		if !returned && len(x.inFlight) == 0 && len(x.fences) == 0 {
			return Input{Kind: InputTimer, Timer: TimerRenewal, Seq: 12345} // stale, ignored
		}
	}
}

func (x *explorer) ttl() time.Duration {
	if x.calm {
		return time.Duration(1000+x.rng.IntN(2000)) * time.Millisecond
	}
	return time.Duration(1+x.rng.IntN(3000)) * time.Millisecond
}

func (x *explorer) pickOp() (OpID, bool) {
	if len(x.inFlight) == 0 {
		return 0, false
	}
	ops := make([]OpID, 0, len(x.inFlight))
	for op := range x.inFlight {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops[x.rng.IntN(len(ops))], true
}

func (x *explorer) completion(op OpID) Input {
	o := Outcome(1 + x.rng.IntN(5))
	if x.calm && x.rng.IntN(2) == 0 {
		o = OutcomeOK
	}
	var err error
	if o >= OutcomeNotSubmitted {
		err = fmt.Errorf("failure %d", o)
	}
	kind := x.inFlight[op]
	unfenced := (kind == EffectSendRelease || kind == EffectSendRenew) && x.rng.IntN(3) == 0
	return Input{Kind: InputCommandDone, Op: op, Outcome: o, Err: err, Unfenced: unfenced}
}

func (x *explorer) timerFire() (Input, bool) {
	if len(x.oldSeqs) > 0 && x.rng.IntN(4) == 0 {
		return Input{Kind: InputTimer, Timer: Timer(1 + x.rng.IntN(2)), Seq: x.oldSeqs[x.rng.IntN(len(x.oldSeqs))]}, true
	}
	order := []Timer{TimerRenewal, TimerDeadline}
	if x.rng.IntN(2) == 0 {
		order[0], order[1] = order[1], order[0]
	}
	for _, tm := range order {
		if seq, ok := x.timers[tm]; ok && x.rng.IntN(2) == 0 {
			if at := x.timerAt[tm]; x.rng.IntN(4) != 0 && at > x.now {
				x.now = at // usually a timer fires when it is due (sometimes late, never early)
			}
			return Input{Kind: InputTimer, Timer: tm, Seq: seq}, true
		}
	}
	return Input{}, false
}

func (x *explorer) cancelSomeone() (Input, bool) {
	var ids []CallerID
	for c := range x.waiting {
		ids = append(ids, c)
	}
	if len(ids) == 0 {
		return Input{}, false
	}
	slices.Sort(ids)
	return Input{Kind: InputCallerCancelled, Caller: ids[x.rng.IntN(len(ids))]}, true
}
