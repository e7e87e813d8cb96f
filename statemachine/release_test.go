package statemachine

import (
	"errors"
	"testing"
	"time"
)

func TestReleaseOutcomes_ReleasedThenAlreadyReleasedWithNothingSent(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c, eff := d.release()
	eff = d.done(find(t, eff, EffectSendRelease).Op, OutcomeOK, nil)
	if r := resultOf(t, eff, c); r.Release != ReleaseReleased {
		t.Fatalf("first release = %+v", r)
	}
	c, eff = d.release()
	if r := resultOf(t, eff, c); r.Release != ReleaseAlreadyReleased || has(eff, EffectSendRelease) {
		t.Fatalf("second release = %+v, effects %+v", r, eff)
	}
	c, eff = d.reset(time.Minute)
	if has(eff, EffectSendRenew) || resultOf(t, eff, c).OK {
		t.Fatal("reset after release sent or succeeded")
	}
}

func TestReleaseOutcomes_ADeleteReturningZeroIsNotOwned(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c, eff := d.release()
	eff = d.done(find(t, eff, EffectSendRelease).Op, OutcomeMismatch, nil)
	if r := resultOf(t, eff, c); r.Release != ReleaseNotOwned || d.h.State() != Lost {
		t.Fatalf("result %+v state %s", r, d.h.State())
	}
	c, eff = d.release()
	if r := resultOf(t, eff, c); r.Release != ReleaseNotOwned || has(eff, EffectSendRelease) {
		t.Fatalf("release on lost handle = %+v", r)
	}
}

func TestConcurrentReleasesShareOneDelete_EveryCallerGetsItsOutcome(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c1, eff := d.release()
	op := find(t, eff, EffectSendRelease).Op
	c2, eff2 := d.release()
	if has(eff2, EffectSendRelease) {
		t.Fatal("joiner sent a second delete")
	}
	eff = d.done(op, OutcomeOK, nil)
	if resultOf(t, eff, c1).Release != ReleaseReleased || resultOf(t, eff, c2).Release != ReleaseReleased {
		t.Fatalf("effects %+v", eff)
	}
}

func TestJoinerCancelsOnlyItself_TheSharedDeleteGoesOn(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c1, eff := d.release()
	op := find(t, eff, EffectSendRelease).Op
	c2, _ := d.release()
	eff = d.step(Input{Kind: InputCallerCancelled, Caller: c2})
	if r := resultOf(t, eff, c2); !errors.Is(r.Err, ErrCallerCancelled) || has(eff, EffectAbort) {
		t.Fatalf("joiner cancel: %+v", eff)
	}
	eff = d.done(op, OutcomeOK, nil)
	if resultOf(t, eff, c1).Release != ReleaseReleased || resolved(eff, c2) {
		t.Fatalf("effects %+v", eff)
	}
}

func TestReleaseHandedToAJoiner_WhenTheStartersDeleteWasNotSent(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c1, eff := d.release()
	op := find(t, eff, EffectSendRelease).Op
	c2, _ := d.release()
	c3, _ := d.release()
	eff = d.done(op, OutcomeNotSubmitted, errTimeout)
	if r := resultOf(t, eff, c1); !errors.Is(r.Err, errTimeout) {
		t.Fatalf("starter result = %+v", r)
	}
	next := find(t, eff, EffectSendRelease)
	if next.Caller != c2 || count(eff, EffectSendRelease) != 1 || d.h.State() != Releasing {
		t.Fatalf("want joiner %d to start one new delete: %+v", c2, eff)
	}
	eff = d.done(next.Op, OutcomeOK, nil)
	if resultOf(t, eff, c2).Release != ReleaseReleased || resultOf(t, eff, c3).Release != ReleaseReleased {
		t.Fatalf("effects %+v", eff)
	}
}

func TestRefusedReleaseKeepsTheLock_EveryCallerGetsTheServerError(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c1, eff := d.release()
	c2, _ := d.release()
	eff = d.done(find(t, eff, EffectSendRelease).Op, OutcomeDefinite, errNoPerm)
	for _, c := range []CallerID{c1, c2} {
		if r := resultOf(t, eff, c); !errors.Is(r.Err, errNoPerm) || r.Outcome != OutcomeDefinite {
			t.Fatalf("caller %d result %+v", c, r)
		}
	}
	if d.h.State() != Held || has(eff, EffectSendRelease) {
		t.Fatalf("state %s effects %+v", d.h.State(), eff)
	}
	c3, eff := d.release()
	eff = d.done(find(t, eff, EffectSendRelease).Op, OutcomeOK, nil)
	if resultOf(t, eff, c3).Release != ReleaseReleased {
		t.Fatal("retry after definite error did not release")
	}
}

func TestUncertainReleaseIsFenced_KeepAliveCancelledThenFenceThenLost(t *testing.T) {
	d := acquired(t, time.Minute, true)
	c, eff := d.release()
	op := find(t, eff, EffectSendRelease).Op
	eff = d.done(op, OutcomeUncertain, errTimeout)
	cancel, fence := index(eff, EffectCancelKeepAlive), index(eff, EffectFence)
	if cancel < 0 || cancel > fence || eff[fence].Op != op || resolved(eff, c) {
		t.Fatalf("effects %+v", eff)
	}
	eff = d.step(Input{Kind: InputFenceDone, Op: op, Err: errors.New("fence denied")})
	if r := resultOf(t, eff, c); !errors.Is(r.Err, errTimeout) || r.Outcome != OutcomeUncertain {
		t.Fatalf("result %+v; want the original error (fence failure only logged)", r)
	}
	c, eff = d.release()
	if resultOf(t, eff, c).Release != ReleaseNotOwned {
		t.Fatal("later release is not NotOwned")
	}
}

func TestLossIsFinal_ARefusedRenewalDuringAReleaseSurvivesItsServerError(t *testing.T) {
	d := acquired(t, time.Second, true)
	eff := d.fire(TimerRenewal, d.last)
	renewOp := find(t, eff, EffectSendRenew).Op
	c, eff := d.release()
	relOp := find(t, eff, EffectSendRelease).Op
	d.done(renewOp, OutcomeMismatch, nil)
	if d.h.State() != Lost {
		t.Fatalf("state = %s; want Lost", d.h.State())
	}
	eff = d.done(relOp, OutcomeDefinite, errNoPerm)
	if r := resultOf(t, eff, c); !errors.Is(r.Err, errNoPerm) || d.h.State() != Lost {
		t.Fatalf("result %+v state %s", r, d.h.State())
	}
	c, eff = d.release()
	if resultOf(t, eff, c).Release != ReleaseNotOwned {
		t.Fatal("later release is not NotOwned")
	}
}

func TestUnfencedRelease_AnUncertainOneIsLostWithoutAFence(t *testing.T) {
	d := acquired(t, time.Minute, true)
	c, eff := d.release()
	eff = d.step(Input{Kind: InputCommandDone, Op: find(t, eff, EffectSendRelease).Op,
		Outcome: OutcomeUncertain, Err: errTimeout, Unfenced: true})
	if has(eff, EffectFence) || d.h.State() != Lost || !has(eff, EffectCancelKeepAlive) {
		t.Fatalf("state %s effects %+v", d.h.State(), eff)
	}
	if r := resultOf(t, eff, c); !errors.Is(r.Err, errTimeout) {
		t.Fatalf("result %+v", r)
	}
}

func TestCloseStopsThenReleases_KeepAliveFirstThenTheDelete(t *testing.T) {
	d := acquired(t, time.Minute, true)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputClose, Caller: c})
	stop, send := index(eff, EffectCancelKeepAlive), index(eff, EffectSendRelease)
	if stop < 0 || send < stop || eff[stop].Ending.Cause != CauseStopped {
		t.Fatalf("effects %+v", eff)
	}
	eff = d.done(eff[send].Op, OutcomeOK, nil)
	if resultOf(t, eff, c).Release != ReleaseReleased {
		t.Fatal("close did not release")
	}
	c2 := d.newCaller()
	if r := resultOf(t, d.step(Input{Kind: InputClose, Caller: c2}), c2); r.Release != ReleaseAlreadyReleased {
		t.Fatalf("second close = %+v", r)
	}
}

func TestCloseStopsThenReleases_ItWaitsForTheRenewalInFlight(t *testing.T) {
	d := acquired(t, time.Second, true)
	eff := d.fire(TimerRenewal, d.last)
	op := find(t, eff, EffectSendRenew).Op
	c := d.newCaller()
	eff = d.step(Input{Kind: InputClose, Caller: c})
	if has(eff, EffectSendRelease) {
		t.Fatalf("released before the renewal finished: %+v", eff)
	}
	eff = d.done(op, OutcomeOK, nil)
	if index(eff, EffectCancelKeepAlive) > index(eff, EffectSendRelease) || !has(eff, EffectSendRelease) {
		t.Fatalf("effects %+v", eff)
	}
}

func TestCloseSwallowsWhatExpiryCovers_TheResultCarriesTheClassification(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputClose, Caller: c})
	eff = d.done(find(t, eff, EffectSendRelease).Op, OutcomeNotSubmitted, errTimeout)
	if r := resultOf(t, eff, c); r.Outcome != OutcomeNotSubmitted {
		t.Fatalf("close result %+v; want classification NotSubmitted", r)
	}
}

func TestCloseJoinsARelease_ThatBecomesUncertain(t *testing.T) {
	d := acquired(t, time.Minute, false)
	_, eff := d.release()
	op := find(t, eff, EffectSendRelease).Op
	c := d.newCaller()
	d.step(Input{Kind: InputClose, Caller: c})
	d.done(op, OutcomeUncertain, errTimeout)
	eff = d.step(Input{Kind: InputFenceDone, Op: op})
	if r := resultOf(t, eff, c); r.Outcome != OutcomeUncertain || d.h.State() != Lost {
		t.Fatalf("close result %+v state %s", r, d.h.State())
	}
}

func TestQueuedResetIsRefusedWhenReleaseSucceedsWhileRenewalInFlight(t *testing.T) {
	d := acquired(t, time.Second, true)
	eff := d.fire(TimerRenewal, d.last)
	renewOp := find(t, eff, EffectSendRenew).Op
	c, _ := d.reset(time.Minute)
	_, eff = d.release()
	if r := resultOf(t, eff, c); r.OK {
		t.Fatal("queued reset succeeded while releasing")
	}
	eff = d.done(find(t, eff, EffectSendRelease).Op, OutcomeOK, nil)
	if find(t, eff, EffectCancelKeepAlive).Ending.Cause != CauseReleased {
		t.Fatalf("release effects %+v; want the keep-alive ended with cause released", eff)
	}
	d.step(Input{Kind: InputCallerCancelled, Caller: c}) // late cancel: ignored
	eff = d.done(renewOp, OutcomeOK, nil)
	if d.h.State() != Released || has(eff, EffectSendRenew) {
		t.Fatalf("state %s effects %+v", d.h.State(), eff)
	}
}

func TestUnfencedRenewal_AnUncertainKeepAliveRenewalIsLostWithoutFenceOrRecovery(t *testing.T) {
	d := acquired(t, time.Minute, true)
	eff := d.fire(TimerRenewal, d.last)
	renew := find(t, eff, EffectSendRenew)
	eff = d.step(Input{Kind: InputCommandDone, Op: renew.Op, Outcome: OutcomeUncertain, Err: errTimeout, Unfenced: true})
	if has(eff, EffectFence) || d.h.State() != Lost {
		t.Fatalf("state %s effects %+v; want Lost without a fence", d.h.State(), eff)
	}
	end := find(t, eff, EffectEndLease).Ending
	if end.Cause != CauseOwnershipLost || end.Reason != ReasonRenewalUnknown || !errors.Is(end.Err, errTimeout) {
		t.Fatalf("ending %+v; want ownership lost, renewal outcome unknown, wrapping the error", end)
	}
}

func TestUnfencedRenewal_AnUncertainResetAnswersItsCallerAtOnce(t *testing.T) {
	d := acquired(t, time.Minute, false)
	c, eff := d.reset(time.Minute)
	eff = d.step(Input{Kind: InputCommandDone, Op: find(t, eff, EffectSendRenew).Op, Outcome: OutcomeUncertain,
		Err: errTimeout, Unfenced: true})
	if has(eff, EffectFence) || d.h.State() != Lost {
		t.Fatalf("state %s effects %+v; want Lost without a fence", d.h.State(), eff)
	}
	if r := resultOf(t, eff, c); !errors.Is(r.Err, errTimeout) || r.OK {
		t.Fatalf("reset result %+v; want the uncertain error", r)
	}
}
