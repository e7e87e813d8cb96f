package statemachine

import (
	"errors"
	"testing"
	"time"
)

func TestEstimateCountsFromTheSend_AndClampsAtZero(t *testing.T) {
	d := newDriver(t)
	d.step(Input{Kind: InputAcquire, Caller: d.newCaller(), TTL: time.Second})
	sentAt := d.now
	d.advance(300 * time.Millisecond) // reply arrives late
	d.done(1, OutcomeOK, nil)
	if got, want := d.h.RemainingEstimate(d.now), 700*time.Millisecond; got != want {
		t.Fatalf("RemainingEstimate = %v; want %v (from the send at %v)", got, want, sentAt)
	}
	if got := d.h.RemainingEstimate(d.now + 5*time.Second); got != 0 {
		t.Fatalf("RemainingEstimate after expiry = %v; want 0", got)
	}
	if d.h.Duration() != time.Second {
		t.Fatalf("Duration = %v; want 1s", d.h.Duration())
	}
}

func TestEstimateCountsFromTheSend_ZeroWhenNotHeld(t *testing.T) {
	d := acquired(t, time.Minute, false)
	_, eff := d.release()
	d.done(find(t, eff, EffectSendRelease).Op, OutcomeOK, nil)
	if got := d.h.RemainingEstimate(d.now); got != 0 {
		t.Fatalf("RemainingEstimate when Released = %v; want 0", got)
	}
}

func TestResetAppliesFromNow_AndCountsFromItsSend(t *testing.T) {
	d := acquired(t, time.Second, false)
	d.advance(400 * time.Millisecond)
	c, eff := d.reset(5 * time.Second)
	renew := find(t, eff, EffectSendRenew)
	if renew.TTL != 5*time.Second || renew.Caller != c {
		t.Fatalf("SendRenew = %+v; want TTL 5s for caller %d", renew, c)
	}
	sentAt := d.now
	d.advance(100 * time.Millisecond)
	eff = d.done(renew.Op, OutcomeOK, nil)
	if r := resultOf(t, eff, c); !r.OK {
		t.Fatalf("reset result = %+v; want OK", r)
	}
	want := 5*time.Second - (d.now - sentAt)
	if got := d.h.RemainingEstimate(d.now); got != want || d.h.Duration() != 5*time.Second {
		t.Fatalf("remaining = %v, duration %v; want %v, 5s", got, d.h.Duration(), want)
	}
}

func TestEndedLockSendsNothing_AResetAfterTheLocalExpiry(t *testing.T) {
	d := acquired(t, time.Second, false)
	d.advance(2 * time.Second)
	c, eff := d.reset(time.Second)
	if has(eff, EffectSendRenew) || resultOf(t, eff, c).OK {
		t.Fatalf("effects = %+v; want false and no send", eff)
	}
}

func TestResetsInRequestOrder_DurationIsTheLastOnes(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c1, eff1 := d.reset(10 * time.Second)
	c2, eff2 := d.reset(20 * time.Second)
	if has(eff2, EffectSendRenew) {
		t.Fatalf("second reset sent while the first is in flight: %+v", eff2)
	}
	eff := d.done(find(t, eff1, EffectSendRenew).Op, OutcomeOK, nil)
	if !resultOf(t, eff, c1).OK {
		t.Fatal("first reset not OK")
	}
	second := find(t, eff, EffectSendRenew)
	if second.Caller != c2 || second.TTL != 20*time.Second {
		t.Fatalf("queued reset sent as %+v; want caller %d ttl 20s", second, c2)
	}
	eff = d.done(second.Op, OutcomeOK, nil)
	if !resultOf(t, eff, c2).OK || d.h.Duration() != 20*time.Second {
		t.Fatalf("Duration = %v; want the second reset's 20s", d.h.Duration())
	}
}

func TestResetsInRequestOrder_AQueuedCallerWhoGivesUpIsNeverSent(t *testing.T) {
	d := acquired(t, time.Minute, false)
	_, eff1 := d.reset(10 * time.Second)
	c2, _ := d.reset(20 * time.Second)
	eff := d.step(Input{Kind: InputCallerCancelled, Caller: c2})
	if r := resultOf(t, eff, c2); !errors.Is(r.Err, ErrCallerCancelled) {
		t.Fatalf("cancelled reset result = %+v", r)
	}
	eff = d.done(find(t, eff1, EffectSendRenew).Op, OutcomeOK, nil)
	if has(eff, EffectSendRenew) {
		t.Fatalf("cancelled reset was sent: %+v", eff)
	}
}

func TestRefusedRenewalIsLoss_AResetAnsweredFalseLosesTheLock(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c, eff := d.reset(time.Minute)
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeMismatch, nil)
	if r := resultOf(t, eff, c); r.OK || r.Err != nil {
		t.Fatalf("result = %+v; want plain false", r)
	}
	if d.h.State() != Lost || d.h.Duration() != time.Minute {
		t.Fatalf("state %s duration %v; want Lost, unchanged 1m", d.h.State(), d.h.Duration())
	}
	c, eff = d.reset(time.Minute)
	if has(eff, EffectSendRenew) || resultOf(t, eff, c).OK {
		t.Fatalf("reset after loss: %+v", eff)
	}
}

func TestUncertainResetIsFenced_KeepAliveCancelledBeforeTheFence(t *testing.T) {
	d := acquired(t, time.Minute, true)
	c, eff := d.reset(time.Minute)
	op := find(t, eff, EffectSendRenew).Op
	eff = d.done(op, OutcomeUncertain, errTimeout)
	cancel, fence := index(eff, EffectCancelKeepAlive), index(eff, EffectFence)
	if cancel < 0 || fence < 0 || cancel > fence {
		t.Fatalf("want CancelKeepAlive before Fence, got %+v", eff)
	}
	if eff[cancel].Ending.Cause != CauseOwnershipLost || eff[fence].Op != op {
		t.Fatalf("cancel %+v fence %+v", eff[cancel], eff[fence])
	}
	if resolved(eff, c) || d.h.State() != Uncertain {
		t.Fatal("caller answered before the fence finished, or not Uncertain")
	}
	eff = d.step(Input{Kind: InputFenceDone, Op: op})
	if r := resultOf(t, eff, c); !errors.Is(r.Err, errTimeout) || r.Outcome != OutcomeUncertain {
		t.Fatalf("result after fence = %+v; want the original timeout", r)
	}
	if d.h.State() != Lost {
		t.Fatalf("state = %s; want Lost", d.h.State())
	}
}

func TestUncertainResetIsFenced_AFailedFenceGoesToTheCaller(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c, eff := d.reset(time.Minute)
	op := find(t, eff, EffectSendRenew).Op
	d.done(op, OutcomeUncertain, errTimeout)
	fenceErr := errors.New("fence denied")
	eff = d.step(Input{Kind: InputFenceDone, Op: op, Err: fenceErr})
	if r := resultOf(t, eff, c); !errors.Is(r.FenceErr, fenceErr) || !errors.Is(r.Err, errTimeout) {
		t.Fatalf("result = %+v; want the fence error beside the renewal's uncertain one", r)
	}
}

func TestRefusedResetChangesNothing_TheCallerGetsTheServerError(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c, eff := d.reset(time.Hour)
	eff = d.done(find(t, eff, EffectSendRenew).Op, OutcomeDefinite, errNoPerm)
	if r := resultOf(t, eff, c); !errors.Is(r.Err, errNoPerm) || r.Outcome != OutcomeDefinite {
		t.Fatalf("result = %+v", r)
	}
	if d.h.State() != Held || d.h.Duration() != time.Minute {
		t.Fatalf("state %s duration %v; want Held 1m", d.h.State(), d.h.Duration())
	}
}

func TestEstimateCountsFromTheSend_TheDeadlineIsSendPlusDuration(t *testing.T) {
	d := newDriver(t)
	d.step(Input{Kind: InputAcquire, Caller: d.newCaller(), TTL: time.Second})
	sentAt := d.now
	d.advance(50 * time.Millisecond)
	d.done(1, OutcomeOK, nil)
	if at, ok := d.h.LeaseDeadline(); !ok || at != sentAt+time.Second {
		t.Fatalf("LeaseDeadline = %v, %v; want %v, true", at, ok, sentAt+time.Second)
	}
	if d.h.IsReleased(d.now) || !d.h.IsReleased(sentAt+time.Second) {
		t.Fatal("IsReleased wrong around the local expiry (rule NotHeldPastTheEstimate)")
	}
}
