package statemachine

// stepOwnerRefuted ends a held lease that an owner-compared read proved lost: a push said
// the key changed, and the read that followed (on another connection, after the change)
// found it missing or holding another token. Tokens are unique and only this handle's
// acquisition wrote this one, so the key cannot become ours again. Outside Held the input
// changes nothing: a release, recovery or fence in flight settles the lease itself, and a
// handle that already ended needs no second cause.
func (h *stepper) stepOwnerRefuted() {
	if h.state != Held {
		return
	}
	h.becomeLost(EventOwnerReadRefused, Ending{Cause: CauseOwnershipLost, Reason: ReasonReadRefused})
}
