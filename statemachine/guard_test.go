package statemachine

import (
	"testing"
	"time"
)

// TestGuardedWriteNeedsTheLease_ARefusalEndsAHeldHandleAtOnce: a guarded
// write's script that found the lease key not holding the token moves a
// Held handle to Lost along guard-refused, as a push-detected loss does:
// the keep-alive is cancelled before the lease ends, with the reason
// ReasonGuardRefused (ReasonFenceRefused when the fence record was above
// the lock's fencing token), and a renewal still in flight settles without
// effect. During a release, and after it, the input changes nothing.
func TestGuardedWriteNeedsTheLease_ARefusalEndsAHeldHandleAtOnce(t *testing.T) {
	for _, stale := range []bool{false, true} {
		want := ReasonGuardRefused
		if stale {
			want = ReasonFenceRefused
		}
		d := acquired(t, 10*time.Second, true)
		renew := find(t, d.fire(TimerRenewal, d.last), EffectSendRenew).Op
		eff := d.step(Input{Kind: InputGuardRefused, StaleFence: stale})
		if d.h.State() != Lost || findTransition(eff).Event != EventGuardRefused {
			t.Fatalf("stale %v: state %s, effects %v; want Lost along guard-refused", stale, d.h.State(), eff)
		}
		cancel := find(t, eff, EffectCancelKeepAlive)
		if cancel.Ending.Cause != CauseOwnershipLost || cancel.Ending.Reason != want {
			t.Fatalf("stale %v: keep-alive ending %+v; want ownership lost, %d", stale, cancel.Ending, want)
		}
		if index(eff, EffectCancelKeepAlive) > index(eff, EffectEndLease) {
			t.Fatal("the lease ended before the keep-alive was cancelled")
		}
		if eff = d.done(renew, OutcomeOK, nil); d.h.State() != Lost || has(eff, EffectEndLease) || has(eff, EffectArmTimer) {
			t.Fatalf("late renewal: state %s, effects %v", d.h.State(), eff)
		}
	}
	r := acquired(t, 10*time.Second, false)
	_, eff := r.release()
	if has(r.step(Input{Kind: InputGuardRefused}), EffectTransition) || r.h.State() != Releasing {
		t.Fatalf("a refusal during a release moved the handle: %s", r.h.State())
	}
	r.done(find(t, eff, EffectSendRelease).Op, OutcomeOK, nil)
	if r.h.State() != Released || len(r.step(Input{Kind: InputGuardRefused})) != 0 {
		t.Fatalf("a refusal after the release changed something: %s", r.h.State())
	}
}

// TestGuardedWriteNeedsTheLease_ARecoveringHandleIsLostToo: the refusal
// is final during a recovery as well (the token is unique; a fence record
// above the token never goes down): at once while the recovery renewal is
// in flight, and as soon as the interrupted renewal's fence answers while
// it is in flight, with no recovery renewal sent.
func TestGuardedWriteNeedsTheLease_ARecoveringHandleIsLostToo(t *testing.T) {
	d, op, _ := interruptedRenewal(t)
	renew := find(t, d.step(Input{Kind: InputFenceDone, Op: op}), EffectSendRenew).Op
	eff := d.step(Input{Kind: InputGuardRefused})
	if d.h.State() != Lost || find(t, eff, EffectCancelKeepAlive).Ending.Reason != ReasonGuardRefused {
		t.Fatalf("a refusal with the recovery renewal in flight: state %s, effects %v", d.h.State(), eff)
	}
	if eff = d.done(renew, OutcomeOK, nil); d.h.State() != Lost || has(eff, EffectEndLease) {
		t.Fatalf("the recovery renewal's late OK: state %s, effects %v", d.h.State(), eff)
	}

	f, op, _ := interruptedRenewal(t)
	if eff := f.step(Input{Kind: InputGuardRefused, StaleFence: true}); f.h.State() != Recovering || has(eff, EffectEndLease) {
		t.Fatalf("a refusal during the fence: state %s, effects %v; want Recovering until the fence answers", f.h.State(), eff)
	}
	eff = f.step(Input{Kind: InputFenceDone, Op: op})
	if f.h.State() != Lost || has(eff, EffectSendRenew) || find(t, eff, EffectCancelKeepAlive).Ending.Reason != ReasonFenceRefused {
		t.Fatalf("the fence answered after a refusal: state %s, effects %v; want Lost, fence refused, no renewal", f.h.State(), eff)
	}
}

// findTransition returns the first EffectTransition of eff (zero when none).
func findTransition(eff []Effect) Effect {
	for _, e := range eff {
		if e.Kind == EffectTransition {
			return e
		}
	}
	return Effect{}
}
