package statemachine

// stepOwnerRefuted ends a held lease that an owner-compared read proved lost: a push said
// the key changed, and the read that followed (on another connection, after the change)
// found it missing or holding another token. Tokens are unique and only this handle's
// acquisition wrote this one, so the key cannot become ours again — whatever the answer of
// a renewal still in flight. So a recovering handle is lost too: at once while its
// recovery renewal is in flight or waits for a retry, and once its fence answers while the
// interrupted renewal's socket is being fenced (the fence's answer is what lets the
// handle leave Recovering). During a release the refusal is remembered: the delete in
// flight settles the lease itself, unless it proves not to have run (not submitted, a
// did-not-run reply), and then the handle is lost instead of held again. In the other
// states the input changes nothing: a handle that already ended needs no second cause.
func (h *stepper) stepOwnerRefuted() { h.refute(ReasonReadRefused) }

// stepGuardRefused ends a held lease that a guarded write's script proved not ours: it found
// the key missing or another owner's, or (stale) a fence record above the lock's fencing
// token. Like a read's refusal it is final — the token is unique, and a fence record is
// only ever raised — and is acted on in the same states, the same way.
func (h *stepper) stepGuardRefused(stale bool) {
	if stale {
		h.refute(ReasonFenceRefused)
	} else {
		h.refute(ReasonGuardRefused)
	}
}

// refute acts on a refusal for reason: at once, or once a recovery's fence answers, or
// once a release in flight proves not to have run.
func (h *stepper) refute(reason Reason) {
	switch {
	case h.state == Recovering && h.fencesPending > 0, h.state == Releasing:
		h.refuted = reason // acted on by fenceDoneRecovering, or by stepReleaseDone
	case h.state == Held, h.state == Recovering:
		h.loseToRefusal(reason)
	}
}

// loseToRefusal is the loss a read or a guarded write proved.
func (h *stepper) loseToRefusal(reason Reason) {
	h.refuted = ReasonNone
	event := EventOwnerReadRefused
	if reason != ReasonReadRefused {
		event = EventGuardRefused
	}
	h.becomeLost(event, Ending{Cause: CauseOwnershipLost, Reason: reason})
}
