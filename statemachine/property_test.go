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
	now       time.Duration
	caller    CallerID
	inFlight  map[OpID]EffectKind
	fences    []OpID
	timers    map[Timer]uint32
	oldSeqs   []uint32
	waiting   map[CallerID]bool
	resolved  map[CallerID]bool
	looplab   func(from State, e Event, to State)
	edgesSeen map[[2]uint8]bool
	buf       []Effect
}

func newExplorer(t *testing.T, seed uint64, seen map[[2]uint8]bool) *explorer {
	f := NewFSM(Acquiring)
	return &explorer{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: time.Second,
		inFlight: map[OpID]EffectKind{}, timers: map[Timer]uint32{},
		waiting: map[CallerID]bool{}, resolved: map[CallerID]bool{}, edgesSeen: seen,
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
	x.now += time.Duration(x.rng.IntN(400)) * time.Millisecond
	s := x.h.State()
	if s == Acquiring && len(x.inFlight) == 0 && x.caller == 0 {
		return Input{Kind: InputAcquire, Caller: x.newCaller(), TTL: x.ttl(), KeepAlive: x.rng.IntN(2) == 0}
	}
	returned := s != Acquiring && s != NotAcquired && s != Abandoned
	for {
		switch x.rng.IntN(12) {
		case 0, 1, 2:
			if op, ok := x.pickOp(); ok {
				return x.completion(op)
			}
		case 3:
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
			if returned {
				return Input{Kind: InputKeepAliveStop, Caller: x.newCaller()}
			}
		case 9, 10:
			if returned {
				return Input{Kind: InputRelease, Caller: x.newCaller()}
			}
		case 11:
			if returned {
				return Input{Kind: InputClose, Caller: x.newCaller()}
			}
		}
		if !returned && len(x.inFlight) == 0 && len(x.fences) == 0 {
			return Input{Kind: InputTimer, Timer: TimerRenewal, Seq: 12345} // stale, ignored
		}
	}
}

func (x *explorer) ttl() time.Duration {
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
	var err error
	if o >= OutcomeNotSubmitted {
		err = fmt.Errorf("failure %d", o)
	}
	unfenced := x.inFlight[op] == EffectSendRelease && x.rng.IntN(3) == 0
	return Input{Kind: InputCommandDone, Op: op, Outcome: o, Err: err, Unfenced: unfenced}
}

func (x *explorer) timerFire() (Input, bool) {
	if len(x.oldSeqs) > 0 && x.rng.IntN(4) == 0 {
		return Input{Kind: InputTimer, Timer: Timer(1 + x.rng.IntN(2)), Seq: x.oldSeqs[x.rng.IntN(len(x.oldSeqs))]}, true
	}
	for _, tm := range []Timer{TimerRenewal, TimerDeadline} {
		if seq, ok := x.timers[tm]; ok && x.rng.IntN(2) == 0 {
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
