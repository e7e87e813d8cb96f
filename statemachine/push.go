package statemachine

// stepOwnerRefuted ends a held lease that an owner-compared read proved lost: a push said
// the key changed, and the read that followed (on another connection, after the change)
// found it missing or holding another token. Tokens are unique and only this handle's
// acquisition wrote this one, so the key cannot become ours again — whatever the answer of
// a renewal still in flight. So a recovering handle is lost too: at once while its
// recovery renewal is in flight or waits for a retry, and once its fence answers while the
// interrupted renewal's socket is being fenced (the fence's answer is what lets the
// handle leave Recovering). In the other states the input changes nothing: a release in
// flight settles the lease itself, and a handle that already ended needs no second cause.
func (h *stepper) stepOwnerRefuted() {
	switch {
	case h.state == Recovering && h.fencesPending > 0:
		h.refuted = true // acted on by fenceDoneRecovering
	case h.state == Held, h.state == Recovering:
		h.loseToRefusal()
	}
}

// loseToRefusal is the loss an owner-compared read proved.
func (h *stepper) loseToRefusal() {
	h.refuted = false
	h.becomeLost(EventOwnerReadRefused, Ending{Cause: CauseOwnershipLost, Reason: ReasonReadRefused})
}
