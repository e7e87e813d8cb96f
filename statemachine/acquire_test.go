package statemachine

import (
	"errors"
	"testing"
	"time"
)

func TestContentionIsNotAnError_AContendedAcquisitionIsNotAcquired(t *testing.T) {
	d := newDriver(t)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputAcquire, Caller: c, TTL: time.Second})
	eff = d.done(find(t, eff, EffectSendAcquire).Op, OutcomeMismatch, nil)
	if r := resultOf(t, eff, c); r.OK || r.Err != nil || d.h.State() != NotAcquired {
		t.Fatalf("result %+v state %s", r, d.h.State())
	}
}

func TestOwnedKeepAlive_AcquireWithKeepAliveStartsIt(t *testing.T) {
	d := acquired(t, time.Second, true)
	if !d.h.KeepAliveActive() || !has(d.last, EffectArmTimer) {
		t.Fatalf("keep-alive not started: %+v", d.last)
	}
}

func TestAbandonedAcquisitionIsCleanedUp_ACancelAfterTheSendEmitsACleanupDelete(t *testing.T) {
	d := newDriver(t)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputAcquire, Caller: c, TTL: time.Second})
	op := find(t, eff, EffectSendAcquire).Op
	eff = d.step(Input{Kind: InputCallerCancelled, Caller: c})
	if r := resultOf(t, eff, c); !errors.Is(r.Err, ErrCallerCancelled) || d.h.State() != Abandoned {
		t.Fatalf("result %+v state %s", r, d.h.State())
	}
	eff = d.done(op, OutcomeOK, nil)
	if find(t, eff, EffectCleanupDelete).Op != op || resolved(eff, c) {
		t.Fatalf("effects %+v", eff)
	}
}

func TestAbandonedAcquisitionIsCleanedUp_AnUncertainSetEmitsACleanupDelete(t *testing.T) {
	d := newDriver(t)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputAcquire, Caller: c, TTL: time.Second})
	eff = d.done(find(t, eff, EffectSendAcquire).Op, OutcomeUncertain, errTimeout)
	if !has(eff, EffectCleanupDelete) || d.h.State() != Abandoned {
		t.Fatalf("effects %+v", eff)
	}
}

func TestUnsentAcquisitionNeedsNoCleanup_ASetNotSubmittedIsAbandonedWithoutOne(t *testing.T) {
	d := newDriver(t)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputAcquire, Caller: c, TTL: time.Second})
	eff = d.done(find(t, eff, EffectSendAcquire).Op, OutcomeNotSubmitted, errTimeout)
	if has(eff, EffectCleanupDelete) || d.h.State() != Abandoned || !errors.Is(resultOf(t, eff, c).Err, errTimeout) {
		t.Fatalf("effects %+v", eff)
	}
}

func TestWaitBudget_PollSchedule(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		poll     Poll
		attempts []time.Duration // completion time of each unacquired attempt
		want     int             // attempts made
	}{
		{"wait 0 gives exactly one attempt", Poll{Wait: 0, RetryEvery: 50 * ms}, []time.Duration{ms}, 1},
		{"last sleep shortened then one more try", Poll{Wait: 500 * ms, RetryEvery: 5 * time.Second}, []time.Duration{0, 500 * ms}, 2},
		{"slow first reply gives one attempt", Poll{Wait: 100 * ms, RetryEvery: 50 * ms}, []time.Duration{200 * ms}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			for _, at := range tt.attempts {
				n++
				if _, again := tt.poll.Next(at, 0.5); !again {
					break
				}
			}
			if n != tt.want {
				t.Fatalf("attempts = %d; want %d", n, tt.want)
			}
		})
	}
	if sleep, _ := (Poll{Wait: 500 * ms, RetryEvery: 5 * time.Second}).Next(0, 0.5); sleep != 500*ms {
		t.Fatalf("sleep = %v; want the remaining 500ms", sleep)
	}
	if sleep, _ := (Poll{Wait: time.Second}).Next(0, 0.5); sleep != DefaultRetryEvery {
		t.Fatalf("default retryEvery sleep = %v", sleep)
	}
}

func TestIllegalInputPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("ResetExpiry before acquisition did not panic")
		}
	}()
	var h Handle
	h.Step(Input{Kind: InputResetExpiry, Caller: 1, TTL: time.Second}, nil)
}

func TestWaitUntilDone_PollsUntilTheCallerGivesUp(t *testing.T) {
	p := Poll{UntilDone: true, Wait: time.Millisecond, RetryEvery: 20 * time.Millisecond}
	for _, now := range []time.Duration{0, time.Second, time.Hour} {
		if sleep, again := p.Next(now, 0.5); !again || sleep != 20*time.Millisecond {
			t.Fatalf("Next(%v) = %v, %v; want a full RetryEvery sleep and another try (Wait is ignored)", now, sleep, again)
		}
	}
}

// TestContentionIsNotAnError_ARefusalNeedsNoHandle: a fresh handle's
// answer to a definite refusal of its SET is the contended edge and the
// caller told "not acquired", nothing else: no timer, no command, no
// clean-up, and a terminal state. lease.tryOnce relies on it to make no Lock
// for a refused try.
func TestContentionIsNotAnError_ARefusalNeedsNoHandle(t *testing.T) {
	d := newDriver(t)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputAcquire, Caller: c, TTL: time.Second, KeepAlive: true})
	if len(eff) != 1 || eff[0].Kind != EffectSendAcquire {
		t.Fatalf("InputAcquire effects %+v; want only the SET", eff)
	}
	eff = d.done(eff[0].Op, OutcomeMismatch, nil)
	for _, e := range eff {
		switch {
		case e.Kind == EffectTransition && e.Event == EventContended:
		case e.Kind == EffectResolve && e.Caller == c && e.Result == (Result{}):
		default:
			t.Errorf("refusal effect %+v; want only the contended edge and the caller's answer", e)
		}
	}
	if !resolved(eff, c) || d.h.State() != NotAcquired || !d.h.State().Terminal() {
		t.Fatalf("state %s (resolved %v); want the terminal NotAcquired", d.h.State(), resolved(eff, c))
	}
}
