package statemachine_test

import (
	"fmt"
	"time"

	sm "github.com/respire-go/respire/statemachine"
)

// A runtime owns one Handle, feeds it one Input at a time with a monotonic Now, and
// executes the returned effects in order, reporting each completion back as an Input.
func Example() {
	var h sm.Handle
	var buf []sm.Effect
	now := time.Duration(0)

	buf = h.Step(sm.Input{Kind: sm.InputAcquire, Now: now, Caller: 1, TTL: 500 * time.Millisecond, KeepAlive: true}, buf[:0])
	acquire := buf[0] // EffectSendAcquire: run SET NX PX, remember which session carried Op
	now += 2 * time.Millisecond
	buf = h.Step(sm.Input{Kind: sm.InputCommandDone, Now: now, Op: acquire.Op, Outcome: sm.OutcomeOK}, buf[:0])
	for _, e := range buf {
		switch e.Kind {
		case sm.EffectTransition:
			fmt.Printf("%s -%s-> %s\n", e.From, e.Event, e.To)
		case sm.EffectResolve:
			fmt.Printf("caller %d: ok=%v\n", e.Caller, e.Result.OK)
		case sm.EffectArmTimer:
			fmt.Printf("arm timer %d at %v\n", e.Timer, e.At)
		}
	}
	fmt.Println(h.State(), h.RemainingEstimate(now))
	// Output:
	// Acquiring -acquired-> Held
	// caller 1: ok=true
	// Held -keepalive-started-> Held
	// arm timer 1 at 250ms
	// arm timer 2 at 500ms
	// Held 498ms
}
