package statemachine

import (
	"errors"
	"testing"
	"time"
)

// endOf returns the EffectEndLease in eff, failing when there is none.
func endOf(t *testing.T, eff []Effect) Ending {
	t.Helper()
	return find(t, eff, EffectEndLease).Ending
}

func TestLeaseContext_WithoutKeepAliveItEndsAtTheDeadline(t *testing.T) {
	d := acquired(t, 10*time.Second, false)
	eff := d.step(Input{Kind: InputWatch})
	arm := findTimer(t, eff, TimerDeadline)
	if deadline, _ := d.h.LeaseDeadline(); arm.At != deadline {
		t.Fatalf("deadline timer at %v; want the lease deadline %v", arm.At, deadline)
	}
	d.now = arm.At
	eff = d.step(Input{Kind: InputTimer, Timer: TimerDeadline, Seq: arm.Seq})
	if end := endOf(t, eff); end.Cause != CauseExpired || d.h.State() != Lost {
		t.Fatalf("at the deadline: %+v in %s; want the lease ended as expired, Lost", end, d.h.State())
	}
}

func TestLeaseContext_ItEndsWithTheReasonOfEveryEnd(t *testing.T) {
	released := acquired(t, time.Minute, false)
	_, eff := released.release()
	eff = released.done(find(t, eff, EffectSendRelease).Op, OutcomeOK, nil)
	if end := endOf(t, eff); end.Cause != CauseReleased {
		t.Fatalf("released: %+v", end)
	}
	refused := acquired(t, time.Minute, false)
	_, eff = refused.reset(time.Minute)
	eff = refused.done(find(t, eff, EffectSendRenew).Op, OutcomeMismatch, nil)
	if end := endOf(t, eff); end.Cause != CauseOwnershipLost || end.Reason != ReasonRefused {
		t.Fatalf("refused renewal: %+v", end)
	}
	unknown := acquired(t, time.Minute, false)
	_, eff = unknown.reset(time.Minute)
	eff = unknown.done(find(t, eff, EffectSendRenew).Op, OutcomeUncertain, errTimeout)
	if end := endOf(t, eff); end.Cause != CauseOwnershipLost || end.Reason != ReasonRenewalUnknown || !errors.Is(end.Err, errTimeout) {
		t.Fatalf("uncertain renewal: %+v", end)
	}
	if index(eff, EffectEndLease) > index(eff, EffectFence) {
		t.Fatal("the lease ended after the fence was asked for; it must end first")
	}
}

func TestLeaseContext_StoppingTheKeepAliveKeepsWatchingTheLease(t *testing.T) {
	d := acquired(t, 10*time.Second, true)
	d.step(Input{Kind: InputWatch})
	c := d.newCaller()
	eff := d.step(Input{Kind: InputKeepAliveStop, Caller: c})
	if has(eff, EffectEndLease) || has(eff, EffectDisarmTimer) && find(t, eff, EffectDisarmTimer).Timer == TimerDeadline {
		t.Fatalf("stopping the keep-alive ended or unwatched the lease: %+v", eff)
	}
	deadline, _ := d.h.LeaseDeadline()
	d.now = deadline
	eff = d.step(Input{Kind: InputObserve})
	if end := endOf(t, eff); end.Cause != CauseExpired {
		t.Fatalf("a lease whose keep-alive was stopped ran out: %+v; want expired", end)
	}
}

func TestAcquiredTooLate_AReplyAfterTheLeaseCouldHaveExpiredIsNotHandedOut(t *testing.T) {
	d := newDriver(t)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputAcquire, Caller: c, TTL: time.Second, Drift: new(DefaultDrift())})
	op := find(t, eff, EffectSendAcquire).Op
	d.advance(time.Second) // the reply took the whole lease
	eff = d.done(op, OutcomeOK, nil)
	if r := resultOf(t, eff, c); r.OK || !errors.Is(r.Err, ErrAcquiredTooLate) || d.h.State() != Abandoned {
		t.Fatalf("a reply after the lease could have expired: %+v in %s; want ErrAcquiredTooLate, Abandoned", r, d.h.State())
	}
	if find(t, eff, EffectCleanupDelete).Op != op {
		t.Fatal("no clean-up of the dead lease")
	}
}
