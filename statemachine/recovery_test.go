package statemachine

import (
	"errors"
	"testing"
	"time"
)

// interruptedRenewal returns a driver holding a 3 s keep-alive lease whose first
// renewal just ended with an unknown outcome, and the effects of that step.
func interruptedRenewal(t *testing.T) (*driver, OpID, []Effect) {
	t.Helper()
	d := acquired(t, 3*time.Second, true)
	eff := d.fire(TimerRenewal, d.last)
	op := find(t, eff, EffectSendRenew).Op
	d.advance(5 * time.Millisecond)
	return d, op, d.done(op, OutcomeUncertain, errTimeout)
}

func TestAnInterruptedKeepAliveRenewalKeepsTheLockAndFencesItsSessionFirst(t *testing.T) {
	d, op, eff := interruptedRenewal(t)
	if d.h.State() != Recovering || has(eff, EffectCancelKeepAlive) {
		t.Fatalf("after an uncertain keep-alive renewal: %s, keep-alive cancelled %v; want Recovering, context live",
			d.h.State(), has(eff, EffectCancelKeepAlive))
	}
	if f := find(t, eff, EffectFence); f.Op != op {
		t.Fatalf("fence of op %d; want the interrupted renewal %d", f.Op, op)
	}
	if has(eff, EffectSendRenew) || d.h.RemainingEstimate(d.now) == 0 {
		t.Fatal("a renewal was sent before the fence answered, or the estimate was dropped")
	}
}

func TestARecoveryRenewalIsSentOnlyAfterTheFenceAnsweredAndConfirmsTheLease(t *testing.T) {
	d, op, _ := interruptedRenewal(t)
	d.advance(10 * time.Millisecond)
	sentAt := d.now
	eff := d.step(Input{Kind: InputFenceDone, Op: op})
	renew := find(t, eff, EffectSendRenew)
	if renew.Caller != 0 || renew.TTL != 3*time.Second || d.h.State() != Recovering {
		t.Fatalf("after the fence: %+v in %s; want the keep-alive's renewal of 3s", renew, d.h.State())
	}
	d.advance(time.Millisecond)
	eff = d.done(renew.Op, OutcomeOK, nil)
	if d.h.State() != Held || has(eff, EffectCancelKeepAlive) {
		t.Fatalf("after the recovery renewal replied OK: %s; want Held with the keep-alive running", d.h.State())
	}
	if deadline, _ := d.h.LeaseDeadline(); deadline != sentAt+3*time.Second {
		t.Fatalf("deadline %v; want the recovery renewal's send time + 3s = %v", deadline, sentAt+3*time.Second)
	}
	findTimer(t, eff, TimerRenewal)
}

func TestARecoveryRenewalAnsweredFalseLosesTheLock(t *testing.T) {
	d, op, _ := interruptedRenewal(t)
	eff := d.step(Input{Kind: InputFenceDone, Op: op})
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeMismatch, nil)
	if d.h.State() != Lost || find(t, eff, EffectCancelKeepAlive).Ending.Cause != CauseOwnershipLost {
		t.Fatalf("state %s, effects %+v; want Lost with cause ownership lost", d.h.State(), eff)
	}
}

func TestAFailedFenceGivesTheRecoveryUp(t *testing.T) {
	d, op, _ := interruptedRenewal(t)
	failure := errors.New("fence: i/o timeout")
	eff := d.step(Input{Kind: InputFenceDone, Op: op, Err: failure})
	cancel := find(t, eff, EffectCancelKeepAlive)
	if d.h.State() != Lost || cancel.Ending.Cause != CauseRenewalFailure || !errors.Is(cancel.Ending.Err, failure) || has(eff, EffectSendRenew) {
		t.Fatalf("state %s, effects %+v; want Lost (renewal failure wrapping the fence's error), nothing sent", d.h.State(), eff)
	}
}

func TestARecoveryRenewalInterruptedAgainIsFencedAgain(t *testing.T) {
	d, op, _ := interruptedRenewal(t)
	eff := d.step(Input{Kind: InputFenceDone, Op: op})
	second := find(t, eff, EffectSendRenew).Op
	eff = d.done(second, OutcomeUncertain, errTimeout)
	if d.h.State() != Recovering || find(t, eff, EffectFence).Op != second || has(eff, EffectCancelKeepAlive) {
		t.Fatalf("state %s, effects %+v; want Recovering, fencing the second renewal", d.h.State(), eff)
	}
}

func TestTheLeaseDeadlinePassingDuringARecoveryGivesOwnershipUp(t *testing.T) {
	d := acquired(t, 3*time.Second, true)
	deadline := findTimer(t, d.last, TimerDeadline)
	op := find(t, d.fire(TimerRenewal, d.last), EffectSendRenew).Op
	d.done(op, OutcomeUncertain, errTimeout)
	d.now = deadline.At
	eff := d.step(Input{Kind: InputTimer, Timer: TimerDeadline, Seq: deadline.Seq})
	if d.h.State() != Uncertain || find(t, eff, EffectCancelKeepAlive).Ending.Cause != CauseOwnershipLost {
		t.Fatalf("at the deadline with the fence pending: %s %+v; want Uncertain, keep-alive cancelled", d.h.State(), eff)
	}
	eff = d.step(Input{Kind: InputFenceDone, Op: op})
	if d.h.State() != Lost || has(eff, EffectSendRenew) {
		t.Fatalf("after the fence: %s %+v; want Lost, nothing sent", d.h.State(), eff)
	}
}

func TestAReleaseWhileRecoveringWaitsForTheRecoveryOutcome(t *testing.T) {
	d, op, _ := interruptedRenewal(t)
	c, eff := d.release()
	if resolved(eff, c) || has(eff, EffectSendRelease) {
		t.Fatal("a release during the recovery was answered or sent at once")
	}
	eff = d.step(Input{Kind: InputFenceDone, Op: op})
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeOK, nil)
	if rel := find(t, eff, EffectSendRelease); rel.Caller != c || d.h.State() != Releasing {
		t.Fatalf("after the recovery: %s %+v; want the deferred release sent", d.h.State(), eff)
	}
}

func TestAReleaseWhileRecoveringIsNotOwnedWhenTheRecoveryFails(t *testing.T) {
	d, op, _ := interruptedRenewal(t)
	c, _ := d.release()
	eff := d.step(Input{Kind: InputFenceDone, Op: op})
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeMismatch, nil)
	if r := resultOf(t, eff, c); r.Release != ReleaseNotOwned || has(eff, EffectSendRelease) {
		t.Fatalf("release after a failed recovery = %+v; want NotOwned, nothing sent", r)
	}
}

func TestAKeepAliveRenewalThatWasNotSubmittedIsRetriedWhileTheDeadlineLasts(t *testing.T) {
	d := acquired(t, 3*time.Second, true)
	eff := d.fire(TimerRenewal, d.last)
	op := find(t, eff, EffectSendRenew).Op
	eff = d.done(op, OutcomeNotSubmitted, errors.New("session retired"))
	if d.h.State() != Held || has(eff, EffectCancelKeepAlive) {
		t.Fatalf("after a not-submitted keep-alive renewal: %s %+v; want Held, keep-alive live", d.h.State(), eff)
	}
	retry := findTimer(t, eff, TimerRenewal)
	if want := RenewalRetryDelay(d.h.RemainingEstimate(d.now)); retry.At-d.now != want {
		t.Fatalf("retry in %v; want %v", retry.At-d.now, want)
	}
	eff = d.fire(TimerRenewal, eff)
	find(t, eff, EffectSendRenew)
}

func TestRenewalRetryDelayIsAnEighthOfTheTimeLeftBetween10msAnd1s(t *testing.T) {
	for _, tt := range []struct{ remaining, want time.Duration }{
		{0, 10 * time.Millisecond}, {40 * time.Millisecond, 10 * time.Millisecond},
		{800 * time.Millisecond, 100 * time.Millisecond}, {time.Minute, time.Second},
	} {
		if got := RenewalRetryDelay(tt.remaining); got != tt.want {
			t.Errorf("RenewalRetryDelay(%v) = %v; want %v", tt.remaining, got, tt.want)
		}
	}
}

func TestStoppingTheKeepAliveDuringARecoveryWaitsForItToSettle(t *testing.T) {
	d, op, _ := interruptedRenewal(t)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputKeepAliveStop, Caller: c})
	if resolved(eff, c) || find(t, eff, EffectCancelKeepAlive).Ending.Cause != CauseStopped {
		t.Fatalf("stop during recovery: %+v; want the context ended (stopped) and the stop pending", eff)
	}
	eff = d.step(Input{Kind: InputFenceDone, Op: op})
	renew := find(t, eff, EffectSendRenew)
	if resolved(eff, c) {
		t.Fatal("the stop completed with the recovery renewal in flight")
	}
	eff = d.done(renew.Op, OutcomeNotSubmitted, errors.New("not sent"))
	if d.h.State() != Lost || !resultOf(t, eff, c).OK {
		t.Fatalf("a recovery without keep-alive is not retried: %s %+v; want Lost and the stop answered", d.h.State(), eff)
	}
}

func TestSurvivesConnectionReset_ARecoveryRenewalThatDidNotRunIsRetriedByTheRenewalTimer(t *testing.T) {
	d, op, _ := interruptedRenewal(t)
	eff := d.step(Input{Kind: InputFenceDone, Op: op})
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeNotSubmitted, errors.New("not sent"))
	retry := findTimer(t, eff, TimerRenewal)
	d.now = retry.At
	eff = d.step(Input{Kind: InputTimer, Timer: TimerRenewal, Seq: retry.Seq})
	if r := find(t, eff, EffectSendRenew); r.Caller != 0 || d.h.State() != Recovering {
		t.Fatalf("the retry timer sent %+v in %s; want the recovery renewal again", r, d.h.State())
	}
}

func TestSurvivesConnectionReset_TheDeadlinePassingWhileARecoveryWaitsToRetryLosesTheLock(t *testing.T) {
	d := acquired(t, 3*time.Second, true)
	deadline := findTimer(t, d.last, TimerDeadline)
	op := find(t, d.fire(TimerRenewal, d.last), EffectSendRenew).Op
	d.done(op, OutcomeUncertain, errTimeout)
	eff := d.step(Input{Kind: InputFenceDone, Op: op})
	d.done(find(t, eff, EffectSendRenew).Op, OutcomeNotSubmitted, errors.New("not sent"))
	d.now = deadline.At
	eff = d.step(Input{Kind: InputTimer, Timer: TimerDeadline, Seq: deadline.Seq})
	if d.h.State() != Lost || find(t, eff, EffectCancelKeepAlive).Ending.Reason != ReasonDeadline {
		t.Fatalf("deadline while waiting to retry: %s %+v; want Lost, reason deadline", d.h.State(), eff)
	}
}
