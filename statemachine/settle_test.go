package statemachine

import (
	"errors"
	"testing"
	"time"
)

var errReset = errors.New("connection reset by peer")

// settling starts a waiting acquisition (Settle) whose SET came back
// uncertain, and returns the driver, the caller and the SET's op.
func settling(t *testing.T, keepAlive bool) (*driver, CallerID, OpID) {
	t.Helper()
	d := newDriver(t)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputAcquire, Caller: c, TTL: time.Second, KeepAlive: keepAlive, Settle: true})
	op := find(t, eff, EffectSendAcquire).Op
	d.advance(10 * time.Millisecond)
	eff = d.done(op, OutcomeUncertain, errReset)
	if s := find(t, eff, EffectSettleAcquire); s.Op != op || s.Caller != c || resolved(eff, c) || d.h.State() != Acquiring {
		t.Fatalf("an uncertain SET of a waiting caller: effects %+v, state %s; want EffectSettleAcquire, nobody answered", eff, d.h.State())
	}
	if has(eff, EffectCleanupDelete) {
		t.Fatalf("a settling try was cleaned up: %+v", eff)
	}
	return d, c, op
}

func settled(d *driver, op OpID, o Outcome) []Effect {
	return d.step(Input{Kind: InputAcquireSettled, Op: op, Outcome: o})
}

// TestWaitRidesOutTransportErrors_ASettledTokenIsHeldFromTheFirstSend: the
// settling found our token: the handle holds the lease, counted from the
// SET's send (not from the settling's answer), and starts its keep-alive.
func TestWaitRidesOutTransportErrors_ASettledTokenIsHeldFromTheFirstSend(t *testing.T) {
	d, c, op := settling(t, true)
	sentAt := d.now - 10*time.Millisecond
	d.advance(100 * time.Millisecond)
	eff := settled(d, op, OutcomeOK)
	if r := resultOf(t, eff, c); !r.OK || d.h.State() != Held || !d.h.KeepAliveActive() {
		t.Fatalf("result %+v, state %s; want acquired and kept alive", r, d.h.State())
	}
	if got, _ := d.h.LeaseDeadline(); got != sentAt+time.Second {
		t.Fatalf("lease deadline %v; want %v (from the first send)", got, sentAt+time.Second)
	}
}

// TestWaitRidesOutTransportErrors_ASettledAbsenceIsNotAcquired: the key was
// not ours after the fence: the try is a refusal (the wait goes on),
// nothing to clean up.
func TestWaitRidesOutTransportErrors_ASettledAbsenceIsNotAcquired(t *testing.T) {
	d, c, op := settling(t, false)
	eff := settled(d, op, OutcomeMismatch)
	if r := resultOf(t, eff, c); r.OK || r.Err != nil || d.h.State() != NotAcquired || has(eff, EffectCleanupDelete) {
		t.Fatalf("result %+v, state %s, effects %+v; want not acquired, no clean-up", r, d.h.State(), eff)
	}
}

// TestWaitRidesOutTransportErrors_AnUnsettledTryIsAbandonedAndCleanedUp:
// no answer could be had: the try is abandoned with the SET's error and
// cleaned up, as without a wait.
func TestWaitRidesOutTransportErrors_AnUnsettledTryIsAbandonedAndCleanedUp(t *testing.T) {
	d, c, op := settling(t, false)
	eff := settled(d, op, OutcomeUncertain)
	r := resultOf(t, eff, c)
	if !errors.Is(r.Err, errReset) || r.Outcome != OutcomeUncertain || d.h.State() != Abandoned || find(t, eff, EffectCleanupDelete).Op != op {
		t.Fatalf("result %+v, state %s, effects %+v; want the SET's error, abandoned, cleaned up", r, d.h.State(), eff)
	}
}

// TestWaitRidesOutTransportErrors_ASettlingSlowerThanTheLeaseIsNotHandedOut:
// our token was found, but only after the lease could have expired.
func TestWaitRidesOutTransportErrors_ASettlingSlowerThanTheLeaseIsNotHandedOut(t *testing.T) {
	d, c, op := settling(t, false)
	d.advance(2 * time.Second)
	eff := settled(d, op, OutcomeOK)
	if r := resultOf(t, eff, c); !errors.Is(r.Err, ErrAcquiredTooLate) || d.h.State() != Abandoned || !has(eff, EffectCleanupDelete) {
		t.Fatalf("result %+v, state %s; want acquired too late, cleaned up", r, d.h.State())
	}
}

// TestWaitRidesOutTransportErrors_ACallerGoneDuringTheSettlingCleansUp: the
// caller gave up while the settling ran; its answer then cleans up what
// the SET may have taken.
func TestWaitRidesOutTransportErrors_ACallerGoneDuringTheSettlingCleansUp(t *testing.T) {
	d, c, op := settling(t, false)
	eff := d.step(Input{Kind: InputCallerCancelled, Caller: c})
	if r := resultOf(t, eff, c); !errors.Is(r.Err, ErrCallerCancelled) || d.h.State() != Abandoned {
		t.Fatalf("result %+v, state %s", r, d.h.State())
	}
	if eff := settled(d, op, OutcomeOK); !has(eff, EffectCleanupDelete) {
		t.Fatalf("effects %+v; want a clean-up of the SET that did run", eff)
	}
}

// Without a wait, an uncertain SET is abandoned at once (no settling).
func TestAbandonedAcquisitionIsCleanedUp_AnUncertainSetWithoutAWaitIsNotSettled(t *testing.T) {
	d := newDriver(t)
	c := d.newCaller()
	eff := d.step(Input{Kind: InputAcquire, Caller: c, TTL: time.Second})
	eff = d.done(find(t, eff, EffectSendAcquire).Op, OutcomeUncertain, errReset)
	if has(eff, EffectSettleAcquire) || d.h.State() != Abandoned || !has(eff, EffectCleanupDelete) {
		t.Fatalf("effects %+v, state %s; want abandoned and cleaned up", eff, d.h.State())
	}
}
