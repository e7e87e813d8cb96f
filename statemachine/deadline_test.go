package statemachine

import (
	"errors"
	"testing"
	"time"
)

//lint:ignore ST1005 the text of a server reply
var errReadOnly = errors.New("READONLY You can't write against a read only replica.")

// Found from outside (issue 19): REPLICAOF mid-run makes every renewal answer READONLY; each is
// retried (it did not run) until the lease deadline passes. The loss must say why no renewal
// was confirmed: the last retried renewal's error travels in the ending.
func TestDeadlineLossSaysWhy_TheLastRetriedRenewalErrorIsTheCause(t *testing.T) {
	d := acquired(t, time.Second, true)
	deadline := findTimer(t, d.last, TimerDeadline)
	eff := d.fire(TimerRenewal, d.last)
	renew := find(t, eff, EffectSendRenew)
	eff = d.done(renew.Op, OutcomeNotSubmitted, errReadOnly)
	if find(t, eff, EffectTransition).Event != EventRenewalRetry {
		t.Fatalf("a renewal that did not run was not retried: %+v", eff)
	}
	d.now = deadline.At
	eff = d.step(Input{Kind: InputTimer, Timer: TimerDeadline, Seq: deadline.Seq})
	end := find(t, eff, EffectEndLease).Ending
	if end.Reason != ReasonDeadline || !errors.Is(end.Err, errReadOnly) {
		t.Fatalf("deadline loss ending = %+v; want ReasonDeadline carrying the last renewal error %v", end, errReadOnly)
	}
}

// With a retry of that renewal in flight at the deadline, the loss says the same.
func TestDeadlineLossSaysWhy_ARetryInFlightAtTheDeadline(t *testing.T) {
	d := acquired(t, time.Second, true)
	deadline := findTimer(t, d.last, TimerDeadline)
	eff := d.fire(TimerRenewal, d.last)
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeNotSubmitted, errReadOnly)
	eff = d.fire(TimerRenewal, eff) // the retry goes out and hangs
	find(t, eff, EffectSendRenew)
	d.now = deadline.At
	eff = d.step(Input{Kind: InputTimer, Timer: TimerDeadline, Seq: deadline.Seq})
	end := find(t, eff, EffectEndLease).Ending
	if end.Reason != ReasonDeadlineInFlight || !errors.Is(end.Err, errReadOnly) {
		t.Fatalf("ending = %+v; want ReasonDeadlineInFlight carrying %v", end, errReadOnly)
	}
}

// A confirmed renewal clears it: a later deadline loss has no stale error.
func TestDeadlineLossSaysWhy_AConfirmedRenewalClearsTheError(t *testing.T) {
	d := acquired(t, time.Second, true)
	eff := d.fire(TimerRenewal, d.last)
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeNotSubmitted, errReadOnly)
	eff = d.fire(TimerRenewal, eff)
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeOK, nil)
	deadline := findTimer(t, eff, TimerDeadline)
	d.now = deadline.At
	eff = d.step(Input{Kind: InputTimer, Timer: TimerDeadline, Seq: deadline.Seq})
	if end := find(t, eff, EffectEndLease).Ending; end.Err != nil {
		t.Fatalf("ending = %+v; want no error after a confirmed renewal", end)
	}
}
