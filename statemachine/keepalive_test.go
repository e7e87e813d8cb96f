package statemachine

import (
	"errors"
	"testing"
	"time"
)

func TestRenewalDelay_Examples(t *testing.T) {
	tests := []struct {
		duration, remaining, want time.Duration
	}{
		{30 * time.Second, 25 * time.Second, 10 * time.Second},
		{30 * time.Second, 15 * time.Second, 10 * time.Millisecond},
		{30 * time.Second, 5 * time.Second, 10 * time.Millisecond},
		{10 * time.Millisecond, 10 * time.Millisecond, 5 * time.Millisecond},
		{1, 1, 1},
		{time.Second, 0, 0},
		{time.Second, -time.Second, 0},
		{500 * time.Millisecond, 500 * time.Millisecond, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := RenewalDelay(tt.duration, tt.remaining); got != tt.want {
			t.Errorf("RenewalDelay(%v, %v) = %v; want %v", tt.duration, tt.remaining, got, tt.want)
		}
	}
}

func TestRenewalDelay_AFreshLeaseOf500msRenewsAt250ms(t *testing.T) {
	d := acquired(t, 500*time.Millisecond, true)
	start := d.now
	arm := findTimer(t, d.last, TimerRenewal)
	if arm.At-start != 250*time.Millisecond {
		t.Fatalf("renewal armed %v after acquisition; want 250ms", arm.At-start)
	}
	eff := d.fire(TimerRenewal, d.last)
	if r := find(t, eff, EffectSendRenew); r.TTL != 500*time.Millisecond || r.Caller != 0 {
		t.Fatalf("keep-alive renewal = %+v", r)
	}
}

func TestOneKeepAlivePerLock_ASecondKeepAliveIsRefused(t *testing.T) {
	d := acquired(t, time.Minute, true)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputKeepAliveStart, Caller: c})
	if r := resultOf(t, eff, c); !errors.Is(r.Err, ErrKeepAliveActive) {
		t.Fatalf("second keep-alive result = %+v", r)
	}
}

func TestResetReschedulesKeepAlive_AShorterLeaseBringsTheNextRenewalForward(t *testing.T) {
	d := acquired(t, time.Minute, true)
	_, eff := d.reset(5 * time.Second)
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeOK, nil)
	arm := findTimer(t, eff, TimerRenewal)
	if arm.At-d.now > 5*time.Second {
		t.Fatalf("next renewal in %v; want well before 30s", arm.At-d.now)
	}
}

func TestKeepAliveUsesTheLatestDuration_AfterAManualReset(t *testing.T) {
	d := acquired(t, time.Minute, true)
	_, eff := d.reset(8 * time.Second)
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeOK, nil)
	eff = d.fire(TimerRenewal, eff)
	if r := find(t, eff, EffectSendRenew); r.TTL != 8*time.Second {
		t.Fatalf("keep-alive renewed with %v; want 8s", r.TTL)
	}
}

func TestNoRenewalWhileReleasing_TheRenewalTimerSendsNothing(t *testing.T) {
	d := acquired(t, time.Second, true)
	armed := d.last
	d.release()
	eff := d.fire(TimerRenewal, armed)
	if has(eff, EffectSendRenew) {
		t.Fatalf("renewal sent while releasing: %+v", eff)
	}
}

func TestNoRenewalWhileReleasing_AReleaseOutlivingTheLeaseDeadlineIsAbortedAndFenced(t *testing.T) {
	d := acquired(t, time.Second, true)
	armed := d.last
	_, eff := d.release()
	relOp := find(t, eff, EffectSendRelease).Op
	eff = d.fire(TimerDeadline, armed)
	if d.h.State() != Uncertain || index(eff, EffectCancelKeepAlive) > index(eff, EffectFence) {
		t.Fatalf("state %s effects %+v", d.h.State(), eff)
	}
	if find(t, eff, EffectFence).Op != relOp || find(t, eff, EffectAbort).Op != relOp {
		t.Fatalf("want abort+fence of the release op: %+v", eff)
	}
}

func TestLeaseDeadlineEndsOwnership_ARenewalDueWithNoTimeLeftIsLost(t *testing.T) {
	d := acquired(t, time.Second, true)
	arm := findTimer(t, d.last, TimerRenewal)
	d.now = d.now + 2*time.Second
	eff := d.step(Input{Kind: InputTimer, Timer: TimerRenewal, Seq: arm.Seq})
	if d.h.State() != Lost || find(t, eff, EffectCancelKeepAlive).Ending.Cause != CauseOwnershipLost {
		t.Fatalf("state %s effects %+v", d.h.State(), eff)
	}
}

func TestLeaseDeadlineEndsOwnership_ARenewalInFlightIsAbortedAndFencedAfterTheCancel(t *testing.T) {
	d := acquired(t, time.Second, true)
	armed := d.last
	eff := d.fire(TimerRenewal, armed)
	op := find(t, eff, EffectSendRenew).Op
	eff = d.fire(TimerDeadline, armed)
	cancel, abort, fence := index(eff, EffectCancelKeepAlive), index(eff, EffectAbort), index(eff, EffectFence)
	if !(cancel >= 0 && cancel < abort && abort < fence) || eff[fence].Op != op {
		t.Fatalf("want cancel, abort, fence of op %d: %+v", op, eff)
	}
	if eff[cancel].Ending.Cause != CauseOwnershipLost || d.h.State() != Uncertain {
		t.Fatalf("cause %v state %s", eff[cancel].Ending.Cause, d.h.State())
	}
	d.done(op, OutcomeUncertain, errTimeout)
	d.step(Input{Kind: InputFenceDone, Op: op})
	if d.h.State() != Lost {
		t.Fatalf("state = %s; want Lost", d.h.State())
	}
}

func TestLeaseDeadlineEndsOwnership_AnIdleDeadlineIsLost(t *testing.T) {
	d := acquired(t, time.Second, true)
	arm := findTimer(t, d.last, TimerDeadline)
	d.now = arm.At
	d.step(Input{Kind: InputTimer, Timer: TimerDeadline, Seq: arm.Seq})
	if d.h.State() != Lost {
		t.Fatalf("state = %s; want Lost", d.h.State())
	}
}

func TestRefusedRenewalIsLoss_TheKeepAliveEndsWithOwnershipLost(t *testing.T) {
	d := acquired(t, time.Second, true)
	eff := d.fire(TimerRenewal, d.last)
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeMismatch, nil)
	if find(t, eff, EffectCancelKeepAlive).Ending.Cause != CauseOwnershipLost || d.h.State() != Lost {
		t.Fatalf("effects %+v state %s", eff, d.h.State())
	}
}

func TestUnsentReleaseKeepsTheLock_TheKeepAliveKeepsRunning(t *testing.T) {
	d := acquired(t, time.Second, true)
	armed := d.last
	c, eff := d.release()
	relOp := find(t, eff, EffectSendRelease).Op
	d.fire(TimerRenewal, armed) // skipped while releasing
	eff = d.done(relOp, OutcomeNotSubmitted, errTimeout)
	if d.h.State() != Held || has(eff, EffectCancelKeepAlive) || !d.h.KeepAliveActive() {
		t.Fatalf("state %s effects %+v", d.h.State(), eff)
	}
	if r := resultOf(t, eff, c); !errors.Is(r.Err, errTimeout) || r.Outcome != OutcomeNotSubmitted {
		t.Fatalf("starter result = %+v", r)
	}
	eff = d.fire(TimerRenewal, eff)
	find(t, eff, EffectSendRenew)
}

func TestFailedRenewalIsLoss_TheCauseIsARenewalFailure(t *testing.T) {
	d := acquired(t, time.Second, true)
	eff := d.fire(TimerRenewal, d.last)
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeDefinite, errNoPerm)
	cancel := find(t, eff, EffectCancelKeepAlive)
	err := cancel.Ending.Cause.Err(cancel.Ending.Err)
	if cancel.Ending.Cause != CauseRenewalFailure || !errors.Is(err, errNoPerm) || !errors.Is(err, ErrOwnershipLost) {
		t.Fatalf("cause %v err %v", cancel.Ending.Cause, err)
	}
	var rf *RenewalFailureError
	if !errors.As(err, &rf) || d.h.State() != Lost {
		t.Fatalf("errors.As RenewalFailureError failed or state %s", d.h.State())
	}
}

func TestReleaseEndsTheKeepAlive_WithCauseReleased(t *testing.T) {
	d := acquired(t, time.Minute, true)
	_, eff := d.release()
	eff = d.done(find(t, eff, EffectSendRelease).Op, OutcomeOK, nil)
	if find(t, eff, EffectCancelKeepAlive).Ending.Cause != CauseReleased || d.h.KeepAliveActive() {
		t.Fatalf("effects %+v", eff)
	}
}

func TestKeepAliveStopKeepsTheLock_StopWaitsForTheRenewalInFlight(t *testing.T) {
	d := acquired(t, time.Second, true)
	eff := d.fire(TimerRenewal, d.last)
	op := find(t, eff, EffectSendRenew).Op
	c := d.newCaller()
	eff = d.step(Input{Kind: InputKeepAliveStop, Caller: c})
	if resolved(eff, c) {
		t.Fatalf("stop completed with a renewal in flight: %+v", eff)
	}
	if find(t, eff, EffectCancelKeepAlive).Ending.Cause != CauseStopped {
		t.Fatalf("the keep-alive context must end when Stop is called: %+v", eff)
	}
	eff = d.done(op, OutcomeOK, nil)
	if !resultOf(t, eff, c).OK || has(eff, EffectCancelKeepAlive) {
		t.Fatalf("effects %+v; want the stop answered and no second cancel", eff)
	}
	if has(eff, EffectSendRelease) || d.h.State() != Held || d.h.KeepAliveActive() {
		t.Fatalf("stop released or left the slot busy: %+v", eff)
	}
	c2 := d.newCaller()
	if r := resultOf(t, d.step(Input{Kind: InputKeepAliveStop, Caller: c2}), c2); !r.OK {
		t.Fatal("second stop not idempotent")
	}
}

func TestKeepAliveCausesAreDistinct(t *testing.T) {
	errs := []error{CauseOwnershipLost.Err(nil), CauseReleased.Err(nil), CauseStopped.Err(nil), CauseRenewalFailure.Err(errTimeout)}
	for i := range errs {
		for j := range errs {
			if i != j && errors.Is(errs[i], errs[j]) && errs[j] != ErrOwnershipLost {
				t.Errorf("cause %d matches cause %d", i, j)
			}
		}
	}
}

func TestStaleTimerFireIsIgnored(t *testing.T) {
	d := acquired(t, time.Minute, true)
	old := findTimer(t, d.last, TimerRenewal)
	_, eff := d.reset(time.Minute)
	d.done(find(t, eff, EffectSendRenew).Op, OutcomeOK, nil) // re-arms
	eff = d.step(Input{Kind: InputTimer, Timer: TimerRenewal, Seq: old.Seq})
	if len(eff) != 0 {
		t.Fatalf("stale fire produced %+v", eff)
	}
}

// Found by the deterministic simulator (sim/dst, seed 8): a keep-alive stopped while its
// renewal hangs must not leave a live context (or a Stop that never returns) behind; the
// deadline watch stays armed until the renewal settles, then aborts and fences it (rule LeaseDeadlineEndsOwnership).
func TestKeepAliveStopKeepsTheLock_AHungRenewalIsStillAbortedAndFencedAtTheDeadline(t *testing.T) {
	d := acquired(t, time.Second, true)
	armed := d.last
	eff := d.fire(TimerRenewal, armed)
	op := find(t, eff, EffectSendRenew).Op
	c := d.newCaller()
	d.step(Input{Kind: InputKeepAliveStop, Caller: c})
	eff = d.fire(TimerDeadline, armed)
	if d.h.State() != Uncertain || !has(eff, EffectAbort) || find(t, eff, EffectFence).Op != op {
		t.Fatalf("at the lease deadline: state %s, effects %+v; want Uncertain, abort and fence of op %d", d.h.State(), eff, op)
	}
	if has(eff, EffectCancelKeepAlive) {
		t.Fatalf("the keep-alive context was cancelled twice: %+v", eff)
	}
	d.done(op, OutcomeUncertain, errTimeout)
	eff = d.step(Input{Kind: InputFenceDone, Op: op})
	if !resultOf(t, eff, c).OK || d.h.State() != Lost || d.h.KeepAliveActive() {
		t.Fatalf("after the fence: state %s, effects %+v; want the stop answered, Lost, slot free", d.h.State(), eff)
	}
}
