package statemachine

import (
	"errors"
	"testing"
	"time"
)

// TestPushDetectsLoss_ReadRefusalEndsAHeldHandleNotAReleasingOne:
// InputOwnerRefuted moves a Held handle to Lost along owner-read-refused,
// cancelling the keep-alive (before the lease's end) with ReasonReadRefused
// and disarming its deadline timer; a renewal still in flight then settles
// without effect. During a release, and after it, the input changes nothing
// (Recovering: the next test).
func TestPushDetectsLoss_ReadRefusalEndsAHeldHandleNotAReleasingOne(t *testing.T) {
	d := acquired(t, 10*time.Second, true)
	eff := d.fire(TimerRenewal, d.last)
	renew := find(t, eff, EffectSendRenew).Op
	eff = d.step(Input{Kind: InputOwnerRefuted})
	if d.h.State() != Lost {
		t.Fatalf("state %s; want Lost", d.h.State())
	}
	cancel := find(t, eff, EffectCancelKeepAlive)
	if cancel.Ending.Cause != CauseOwnershipLost || cancel.Ending.Reason != ReasonReadRefused {
		t.Fatalf("keep-alive ending %+v; want ownership lost, read refused", cancel.Ending)
	}
	if index(eff, EffectCancelKeepAlive) > index(eff, EffectEndLease) {
		t.Fatal("the lease ended before the keep-alive was cancelled")
	}
	if findTimerDisarmed(eff) != TimerDeadline {
		t.Fatalf("effects %v; want the deadline timer disarmed", eff)
	}
	eff = d.done(renew, OutcomeOK, nil)
	if d.h.State() != Lost || has(eff, EffectEndLease) || has(eff, EffectArmTimer) {
		t.Fatalf("late renewal: state %s, effects %v", d.h.State(), eff)
	}

	r := acquired(t, 10*time.Second, false)
	_, eff = r.release()
	if has(r.step(Input{Kind: InputOwnerRefuted}), EffectTransition) || r.h.State() != Releasing {
		t.Fatalf("a refusal during a release moved the handle: %s", r.h.State())
	}
	r.done(find(t, eff, EffectSendRelease).Op, OutcomeOK, nil)
	if r.h.State() != Released || len(r.step(Input{Kind: InputOwnerRefuted})) != 0 {
		t.Fatalf("a refusal after the release changed something: %s", r.h.State())
	}
	if !errors.Is(CauseOwnershipLost.Err(nil), ErrOwnershipLost) {
		t.Fatal("cause error")
	}
}

// findTimerDisarmed returns the timer of the first EffectDisarmTimer, or TimerNone.
func findTimerDisarmed(eff []Effect) Timer {
	for _, e := range eff {
		if e.Kind == EffectDisarmTimer {
			return e.Timer
		}
	}
	return TimerNone
}

// TestPushDetectsLoss_ARecoveringHandleActsOnARefusal: a read refusal
// during a recovery is acted on too — the token is unique, so no answer of
// the interrupted or the recovery renewal can make the key ours again. With
// the recovery renewal in flight the handle is Lost at once (the renewal
// then settles without effect); while the interrupted renewal's fence is
// in flight it is Lost as soon as the fence answers, and no recovery
// renewal is sent.
func TestPushDetectsLoss_ARecoveringHandleActsOnARefusal(t *testing.T) {
	d, op, _ := interruptedRenewal(t)
	renew := find(t, d.step(Input{Kind: InputFenceDone, Op: op}), EffectSendRenew).Op
	eff := d.step(Input{Kind: InputOwnerRefuted})
	if d.h.State() != Lost || find(t, eff, EffectCancelKeepAlive).Ending.Reason != ReasonReadRefused {
		t.Fatalf("a refusal with the recovery renewal in flight: state %s, effects %v; want Lost, read refused", d.h.State(), eff)
	}
	if eff = d.done(renew, OutcomeOK, nil); d.h.State() != Lost || has(eff, EffectEndLease) || has(eff, EffectArmTimer) {
		t.Fatalf("the recovery renewal's late OK: state %s, effects %v; want Lost, nothing", d.h.State(), eff)
	}

	f, op, _ := interruptedRenewal(t)
	if eff := f.step(Input{Kind: InputOwnerRefuted}); f.h.State() != Recovering || has(eff, EffectEndLease) {
		t.Fatalf("a refusal during the fence: state %s, effects %v; want Recovering until the fence answers", f.h.State(), eff)
	}
	eff = f.step(Input{Kind: InputFenceDone, Op: op})
	if f.h.State() != Lost || has(eff, EffectSendRenew) || find(t, eff, EffectCancelKeepAlive).Ending.Reason != ReasonReadRefused {
		t.Fatalf("the fence answered after a refusal: state %s, effects %v; want Lost, read refused, no renewal", f.h.State(), eff)
	}
}

// TestPushDetectsLoss_ARefusalDuringAReleaseThatDidNotRunEndsTheLock: a
// read refusal that comes while a release is in flight changes nothing
// then (the delete settles the lease itself), but when that delete proves
// not to have run — not submitted, or a did-not-run server reply — the
// handle does not go back to holding a key a read proved another's: it is
// Held again only to be Lost at once, with the read's reason, and its
// keep-alive ends. (The deterministic simulator found a keep-alive holder
// that stayed Held after an outsider's overwrite once its release's
// permission probe was cancelled.)
func TestPushDetectsLoss_ARefusalDuringAReleaseThatDidNotRunEndsTheLock(t *testing.T) {
	for _, outcome := range []Outcome{OutcomeNotSubmitted, OutcomeDefinite} {
		d := acquired(t, 10*time.Second, true)
		c, eff := d.release()
		op := find(t, eff, EffectSendRelease).Op
		if eff := d.step(Input{Kind: InputOwnerRefuted}); d.h.State() != Releasing || has(eff, EffectTransition) {
			t.Fatalf("%s: a refusal during the release moved the handle: %s", outcome, d.h.State())
		}
		eff = d.done(op, outcome, errors.New("the delete did not run"))
		if d.h.State() != Lost || find(t, eff, EffectCancelKeepAlive).Ending.Reason != ReasonReadRefused {
			t.Fatalf("%s: state %s, effects %v; want Lost, read refused", outcome, d.h.State(), eff)
		}
		if r := find(t, eff, EffectResolve); r.Caller != c || r.Result.Err == nil {
			t.Fatalf("%s: the releaser got %+v; want the delete's error", outcome, r)
		}
	}
	d := acquired(t, 10*time.Second, false) // a release that ran ends the lease as usual
	_, eff := d.release()
	d.step(Input{Kind: InputOwnerRefuted})
	if d.done(find(t, eff, EffectSendRelease).Op, OutcomeMismatch, nil); d.h.State() != Lost {
		t.Fatalf("state %s; want Lost (not owned)", d.h.State())
	}
}
