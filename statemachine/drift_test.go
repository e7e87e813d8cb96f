package statemachine

import (
	"math"
	"testing"
	"time"
)

func TestTheLeaseDeadlineIsEarlierThanTheServersByTheDriftMargin(t *testing.T) {
	d := newDriver(t)
	c := d.newCaller()
	sent := d.now
	eff := d.step(Input{Kind: InputAcquire, Caller: c, TTL: 10 * time.Second, KeepAlive: true, Drift: new(DefaultDrift())})
	eff = d.done(find(t, eff, EffectSendAcquire).Op, OutcomeOK, nil)
	want := sent + 10*time.Second - (2*time.Millisecond + 100*time.Millisecond)
	if deadline, _ := d.h.LeaseDeadline(); deadline != want {
		t.Fatalf("deadline %v after the send; want 10s − (2ms + 1%% of 10s) = %v", deadline-sent, want-sent)
	}
	if at := findTimer(t, eff, TimerDeadline).At; at != want {
		t.Fatalf("deadline timer at %v; want %v", at-sent, want-sent)
	}
}

func TestDriftOfDoesNotOverflow(t *testing.T) {
	for _, tt := range []struct {
		drift    Drift
		duration time.Duration
		want     time.Duration
	}{
		{DefaultDrift(), time.Second, 12 * time.Millisecond},
		{DefaultDrift(), 0, 2 * time.Millisecond},
		{Drift{PPM: 1_000_000}, math.MaxInt64, math.MaxInt64},
		{Drift{PPM: 10_000}, math.MaxInt64, math.MaxInt64 / 100},
	} {
		if got := tt.drift.Of(tt.duration); got != tt.want {
			t.Errorf("%+v.Of(%v) = %v; want %v", tt.drift, tt.duration, got, tt.want)
		}
	}
}

func TestAHandleWhoseEstimateRanOutIsNotHeldWhenObserved(t *testing.T) {
	d := acquired(t, time.Second, false)
	d.advance(time.Second)
	d.step(Input{Kind: InputObserve})
	if d.h.State() != Lost || d.h.RemainingEstimate(d.now) != 0 {
		t.Fatalf("observed after its estimate ran out: %s; want Lost", d.h.State())
	}
}

func TestAReleaseAfterTheEstimateRanOutSendsNothingAndIsNotOwned(t *testing.T) {
	d := acquired(t, time.Second, false)
	d.advance(time.Second)
	c, eff := d.release()
	if r := resultOf(t, eff, c); r.Release != ReleaseNotOwned || has(eff, EffectSendRelease) {
		t.Fatalf("release after local expiry = %+v; want NotOwned without a delete", r)
	}
}

func TestAReleaseOfAHandleBeingFencedIsAnsweredOnlyAfterTheFence(t *testing.T) {
	d := acquired(t, time.Minute, true)
	_, eff := d.reset(time.Minute)
	op := find(t, eff, EffectSendRenew).Op
	d.done(op, OutcomeUncertain, errTimeout)
	if d.h.State() != Uncertain {
		t.Fatalf("state %s; want Uncertain", d.h.State())
	}
	c, eff := d.release()
	if resolved(eff, c) {
		t.Fatal("a release answered while the fence is pending")
	}
	eff = d.step(Input{Kind: InputFenceDone, Op: op})
	if r := resultOf(t, eff, c); r.Release != ReleaseNotOwned || d.h.State() != Lost {
		t.Fatalf("after the fence: %+v in %s; want NotOwned, Lost", r, d.h.State())
	}
}
