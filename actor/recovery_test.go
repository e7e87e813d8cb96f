package actor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// parkedSpawn is a Spawn that keeps what it is asked to run and runs none
// of it: a test steps the lock by hand.
type parkedSpawn struct{ started int }

func (s *parkedSpawn) Go(func()) { s.started++ }

func (s *parkedSpawn) Wait(ctx context.Context, _ <-chan struct{}) error { return context.Cause(ctx) }

func (s *parkedSpawn) AfterFunc(context.Context, func()) func() bool {
	return func() bool { return true }
}

// TestRecoveryDefersRequests_AReleaseAndAResetWaitingForTheRecoveryGoOutTogether:
// a keep-alive lock whose renewal had an unknown outcome recovers; a
// release and a reset made meanwhile wait, and the step of the recovery
// renewal's confirmation sends both — two commands started by the
// completion of a third, which must find room in the lock's command slots
// (the simulator found the driver panicking there: "a third command in
// flight on one lock").
func TestRecoveryDefersRequests_AReleaseAndAResetWaitingForTheRecoveryGoOutTogether(t *testing.T) {
	clock := &ManualClock{}
	spawn := &parkedSpawn{}
	d := New(Config{Transport: standaloneOnly{}, Clock: clock, Spawn: spawn, NewToken: testToken, Drift: sm.DefaultDrift()})
	l := &Lock{d: d, wireKey: "k", token: "t", flags: flagOwnedKeepAlive}
	l.mu.Lock()
	defer l.mu.Unlock()
	caller := l.newCaller(context.Background())
	set := l.step(sm.Input{Kind: sm.InputAcquire, Caller: caller, TTL: 10 * time.Second, KeepAlive: true,
		Drift: &d.drift, Now: clock.Now()}, caller)
	l.step(sm.Input{Kind: sm.InputCommandDone, Op: set.op, Outcome: sm.OutcomeOK, Now: clock.Now()}, caller)
	l.mu.Unlock()
	clock.Advance(5 * time.Second) // the renewal timer ticks (through the heap) and sends a renewal
	l.mu.Lock()
	renewal := l.cmds.ops[0]
	if l.h.State() != sm.Held || renewal == 0 {
		t.Fatalf("state %v, renewal op %d; want Held with a renewal in flight", l.h.State(), renewal)
	}
	lost := &conn.Error{Class: conn.Uncertain, Op: "extend", Err: errors.New("connection reset")}
	l.step(sm.Input{Kind: sm.InputCommandDone, Op: renewal, Outcome: sm.OutcomeUncertain, Err: lost, Now: clock.Now()}, 0)
	release, reset := l.newCaller(context.Background()), l.newCaller(context.Background())
	l.step(sm.Input{Kind: sm.InputRelease, Caller: release, Now: clock.Now()}, release)
	l.step(sm.Input{Kind: sm.InputResetExpiry, Caller: reset, TTL: 10 * time.Second, Now: clock.Now()}, reset)
	l.step(sm.Input{Kind: sm.InputFenceDone, Op: renewal, Now: clock.Now()}, 0)
	recovery := l.cmds.ops[0]
	if l.h.State() != sm.Recovering || recovery == 0 {
		t.Fatalf("state %v, recovery op %d; want Recovering with its renewal in flight", l.h.State(), recovery)
	}
	l.step(sm.Input{Kind: sm.InputCommandDone, Op: recovery, Outcome: sm.OutcomeOK, Now: clock.Now()}, 0)
	if got := l.cmds.ops; got[0] == 0 || got[1] == 0 || got[0] == recovery || got[1] == recovery {
		t.Fatalf("commands in flight %v after the recovery confirmed; want the reset's renewal and the release", got)
	}
}
