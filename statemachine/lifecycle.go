package statemachine

import "time"

func (h *stepper) stepAcquire(in Input) {
	if h.state != Acquiring || h.lastOp != 0 {
		panic("statemachine: InputAcquire on a handle that already acquired")
	}
	h.renewOp = h.nextOp()
	h.renewEnd, h.renewTTL, h.renewCaller = h.leaseEnd(in.Now, in.TTL), in.TTL, in.Caller
	h.acquireWants = 0
	if in.KeepAlive {
		h.acquireWants |= wantKeepAlive
	}
	if in.Settle {
		h.acquireWants |= wantSettle
	}
	h.emit(Effect{Kind: EffectSendAcquire, Op: h.renewOp, TTL: in.TTL, Caller: in.Caller})
}

func (h *stepper) stepCommandDone(in Input) {
	switch {
	case in.Op == 0:
		panic("statemachine: completion without an op")
	case in.Op == h.renewOp && (h.state == Acquiring || h.state == Abandoned):
		h.stepAcquireDone(in)
	case in.Op == h.renewOp:
		h.stepRenewDone(in)
	case in.Op == h.releaseOp:
		h.stepReleaseDone(in)
	default:
		panic("statemachine: completion for an op that is not in flight")
	}
}

func (h *stepper) stepAcquireDone(in Input) {
	caller := h.renewCaller
	h.renewOp, h.renewCaller = 0, 0
	mayHaveApplied := in.Outcome == OutcomeOK || in.Outcome == OutcomeUncertain
	switch {
	case h.state == Abandoned:
		h.stay(EventAcquireSettled)
		if mayHaveApplied {
			h.emit(Effect{Kind: EffectCleanupDelete, Op: in.Op})
		}
	case in.Outcome == OutcomeOK && in.Now >= h.renewEnd:
		// The reply came after the lease could have expired: never hand out a dead handle.
		h.move(EventAcquireAbandoned, Abandoned)
		h.emit(Effect{Kind: EffectCleanupDelete, Op: in.Op})
		h.resolve(caller, Result{Err: ErrAcquiredTooLate})
	case in.Outcome == OutcomeOK:
		h.move(EventAcquired, Held)
		h.duration, h.confirmedEnd = h.renewTTL, h.renewEnd
		h.resolve(caller, Result{OK: true})
		if h.acquireWants.has(wantKeepAlive) {
			h.startKeepAlive(in.Now)
		}
	case in.Outcome == OutcomeMismatch:
		h.move(EventContended, NotAcquired)
		h.resolve(caller, Result{})
	case in.Outcome == OutcomeUncertain && h.acquireWants.has(wantSettle):
		// A waiting caller: settle the SET (fence its socket, read the key) instead of
		// giving the try up (rule WaitRidesOutTransportErrors).
		h.stay(EventAcquireSettling)
		h.renewOp, h.renewCaller = in.Op, caller
		h.fenceErr = in.Err
		h.emit(Effect{Kind: EffectSettleAcquire, Op: in.Op, Caller: caller})
	case in.Outcome == OutcomeUncertain:
		h.move(EventAcquireAbandoned, Abandoned)
		h.emit(Effect{Kind: EffectCleanupDelete, Op: in.Op})
		h.resolve(caller, Result{Err: in.Err, Outcome: outcomeOf(in)})
	default:
		h.move(EventAcquireFailed, Abandoned)
		h.resolve(caller, Result{Err: in.Err, Outcome: outcomeOf(in)})
	}
}

// stepAcquireSettled takes the answer to EffectSettleAcquire: our token in the key means the
// SET ran (Held, counted from its first send, unless that lease could have expired already);
// anything else after the fence means it never will (NotAcquired: the wait goes on); an
// answer that could not be had abandons the try, with a clean-up.
func (h *stepper) stepAcquireSettled(in Input) {
	if in.Op == 0 || in.Op != h.renewOp || (h.state != Acquiring && h.state != Abandoned) {
		panic("statemachine: settling answer without a settling in flight")
	}
	caller, uncertainErr := h.renewCaller, h.fenceErr
	h.renewOp, h.renewCaller, h.fenceErr = 0, 0, nil
	switch {
	case h.state == Abandoned: // the caller gave up meanwhile
		h.stay(EventAcquireSettled)
		if in.Outcome != OutcomeMismatch {
			h.emit(Effect{Kind: EffectCleanupDelete, Op: in.Op})
		}
	case in.Outcome == OutcomeOK && in.Now >= h.renewEnd:
		h.move(EventAcquireAbandoned, Abandoned)
		h.emit(Effect{Kind: EffectCleanupDelete, Op: in.Op})
		h.resolve(caller, Result{Err: ErrAcquiredTooLate})
	case in.Outcome == OutcomeOK:
		h.move(EventAcquireConfirmed, Held)
		h.duration, h.confirmedEnd = h.renewTTL, h.renewEnd
		h.resolve(caller, Result{OK: true})
		if h.acquireWants.has(wantKeepAlive) {
			h.startKeepAlive(in.Now)
		}
	case in.Outcome == OutcomeMismatch:
		h.move(EventAcquireNotTaken, NotAcquired)
		h.resolve(caller, Result{})
	default:
		h.move(EventAcquireAbandoned, Abandoned)
		h.emit(Effect{Kind: EffectCleanupDelete, Op: in.Op})
		h.resolve(caller, Result{Err: uncertainErr, Outcome: OutcomeUncertain})
	}
}

// stepRelease answers, starts or joins a release (rules ReleaseOutcomes, ConcurrentReleasesShareOneDelete).
func (h *stepper) stepRelease(caller CallerID, now time.Duration) {
	switch h.state {
	case Held:
		h.startRelease(caller, now)
	case Releasing:
		h.stay(EventReleaseJoined)
		h.waiters = append(h.waiters, waiter{caller: caller, kind: waitRelease})
	case Recovering:
		// Started by pump once the recovery confirms the lease; NotOwned if it does not.
		h.stay(EventReleaseDeferred)
		h.waiters = append(h.waiters, waiter{caller: caller, kind: waitRelease})
	case Uncertain:
		// Answered NotOwned when the fence answers: until then a command of this
		// handle may still run, and the caller must not go on as if it could not.
		h.stay(EventReleaseAnswered)
		h.waiters = append(h.waiters, waiter{caller: caller, kind: waitRelease})
	case Released:
		h.stay(EventReleaseAnswered)
		h.resolve(caller, Result{Release: ReleaseAlreadyReleased})
	default:
		h.stay(EventReleaseAnswered) // panics outside Lost
		h.resolve(caller, Result{Release: ReleaseNotOwned})
	}
}

func (h *stepper) startRelease(caller CallerID, _ time.Duration) {
	h.move(EventReleaseStarted, Releasing)
	h.releaseOp, h.releaseStarter = h.nextOp(), caller
	h.emit(Effect{Kind: EffectSendRelease, Op: h.releaseOp, Caller: caller})
}

// stepClose stops an active keep-alive first, then releases (rule CloseStopsThenReleases); idempotent.
func (h *stepper) stepClose(in Input) {
	if h.keepAlive == keepAliveNone {
		h.stepRelease(in.Caller, in.Now)
		return
	}
	h.stepKeepAliveStop(in, false)
	h.waiters = append(h.waiters, waiter{caller: in.Caller, kind: waitClose})
}

func (h *stepper) stepReleaseDone(in Input) {
	starter := h.releaseStarter
	h.releaseOp, h.releaseStarter = 0, 0
	refuted := h.refuted // a read (or guarded write) proved the key not ours during the release
	h.refuted = ReasonNone
	if len(h.waiters) == 0 && (h.state != Releasing || in.Outcome == OutcomeOK) {
		h.releaseDoneAlone(starter, in) // the usual release: no list to build
		return
	}
	h.waiters = append([]waiter{{caller: starter, kind: waitRelease}}, h.waiters...)
	failed := Result{Err: in.Err, Outcome: outcomeOf(in)}
	switch {
	case h.state != Releasing:
		h.stay(EventReleaseSettled)
		h.resolveAll(waitRelease, settledResult(in))
	case in.Outcome == OutcomeOK:
		h.move(EventReleased, Released)
		h.endKeepAlive(Ending{Cause: CauseReleased})
		h.endLease(Ending{Cause: CauseReleased})
		h.resolveAll(waitRelease, Result{Release: ReleaseReleased})
	case in.Outcome == OutcomeMismatch:
		h.becomeLost(EventReleaseNotOwned, Ending{Cause: CauseOwnershipLost, Reason: ReasonRefused})
		h.resolveAll(waitRelease, Result{Release: ReleaseNotOwned})
	case in.Outcome == OutcomeNotSubmitted:
		h.becomeHeldAgain(EventReleaseNotSubmitted, in.Now)
		h.resolve(starter, failed)
		h.takeFirstWaiter(waitRelease, starter)
		h.loseIfRefuted(refuted)
	case in.Outcome == OutcomeDefinite:
		h.becomeHeldAgain(EventReleaseRefused, in.Now)
		h.resolveAll(waitRelease, failed)
		h.loseIfRefuted(refuted)
	case in.Unfenced:
		callers := h.takeWaiters(waitRelease)
		h.becomeLost(EventReleaseUncertainUnfenced, Ending{Cause: CauseOwnershipLost, Reason: ReasonReleaseUnknown, Err: in.Err})
		for _, w := range callers {
			h.resolve(w.caller, failed)
		}
	default:
		for _, w := range h.takeWaiters(waitRelease) {
			h.waiters = append(h.waiters, waiter{caller: w.caller, kind: waitFenceRelease})
		}
		h.becomeUncertain(EventReleaseUncertain, in.Err, false, ReasonReleaseUnknown, in.Op)
	}
}

// releaseDoneAlone is stepReleaseDone's first two cases when nobody else waits: the same
// effects in the same order, with the starter answered directly instead of through the
// waiter list (move, stay, endKeepAlive and endLease do not look at the list).
func (h *stepper) releaseDoneAlone(starter CallerID, in Input) {
	if h.state != Releasing {
		h.stay(EventReleaseSettled)
		h.resolve(starter, settledResult(in))
		return
	}
	h.move(EventReleased, Released)
	h.endKeepAlive(Ending{Cause: CauseReleased})
	h.endLease(Ending{Cause: CauseReleased})
	h.resolve(starter, Result{Release: ReleaseReleased})
}

// takeFirstWaiter removes the first waiter of kind k for caller (the resolved starter).
func (h *stepper) takeFirstWaiter(k waitKind, caller CallerID) {
	for i, w := range h.waiters {
		if w.kind == k && w.caller == caller {
			h.waiters = append(h.waiters[:i], h.waiters[i+1:]...)
			return
		}
	}
}

// settledResult is what releasers get for a delete that completes after ownership was
// already given up: the delete's own truth, never a restored Held (rule LossIsFinal).
func settledResult(in Input) Result {
	switch in.Outcome {
	case OutcomeOK:
		return Result{Release: ReleaseReleased}
	case OutcomeMismatch:
		return Result{Release: ReleaseNotOwned}
	}
	return Result{Err: in.Err, Outcome: outcomeOf(in)}
}

// becomeHeldAgain restores ownership after a release that did not run (rules
// UnsentReleaseKeepsTheLock, RefusedReleaseKeepsTheLock); the keep-alive keeps running and
// is rescheduled.
func (h *stepper) becomeHeldAgain(e Event, now time.Duration) {
	h.move(e, Held)
	h.scheduleKeepAlive(now)
}

// loseIfRefuted ends a handle just held again after a release that did not run, when a
// read or a guarded write proved the key not ours meanwhile (refuted; none: nothing).
func (h *stepper) loseIfRefuted(refuted Reason) {
	if refuted != ReasonNone {
		h.loseToRefusal(refuted)
	}
}

// becomeLost ends ownership for good: the keep-alive and the lease end with why; queued
// resets are refused by pump; releasers still waiting for a delete in flight keep waiting.
func (h *stepper) becomeLost(e Event, why Ending) {
	h.move(e, Lost)
	h.endKeepAlive(why)
	h.endLease(why)
	if h.releaseOp == 0 {
		h.resolveAll(waitRelease, Result{Release: ReleaseNotOwned})
	}
}

// becomeUncertain gives ownership up at once (keep-alive and lease ended FIRST), then
// aborts (deadline case) and fences every op that may still run.
func (h *stepper) becomeUncertain(e Event, err error, abort bool, reason Reason, ops ...OpID) {
	h.move(e, Uncertain)
	why := Ending{Cause: CauseOwnershipLost, Reason: reason, Err: err}
	if reason == ReasonDeadlineInFlight {
		why.Err = h.renewErr // why no renewal was confirmed before, if one was retried (rule DeadlineLossSaysWhy)
	}
	h.endKeepAlive(why)
	h.endLease(why)
	h.fenceErr = err
	for _, op := range ops {
		if op == 0 {
			continue
		}
		if abort {
			h.emit(Effect{Kind: EffectAbort, Op: op})
		}
		h.emit(Effect{Kind: EffectFence, Op: op})
		h.fencesPending++
	}
}

func (h *stepper) stepFenceDone(in Input) {
	if h.fencesPending == 0 || (h.state != Uncertain && h.state != Recovering) {
		panic("statemachine: fence completion without a fence in flight")
	}
	h.fencesPending--
	if h.state == Recovering {
		h.fenceDoneRecovering(in)
		return
	}
	if h.fencesPending > 0 {
		return
	}
	h.move(EventFenceDone, Lost)
	// A failed fence reaches the callers as FenceErr, beside their command's
	// uncertain error: the command may still run.
	h.resolveAll(waitFenceReset, Result{Err: h.fenceErr, Outcome: OutcomeUncertain, FenceErr: in.Err})
	h.resolveAll(waitFenceRelease, Result{Err: h.fenceErr, Outcome: OutcomeUncertain, FenceErr: in.Err})
	h.fenceErr = nil
	if h.releaseOp == 0 {
		h.resolveAll(waitRelease, Result{Release: ReleaseNotOwned})
	}
}

// fenceDoneRecovering continues a recovery once the interrupted renewal's socket is fenced:
// nothing of it can run any more, so an owner-compared renewal on a fresh session settles
// ownership. A failed fence gives the recovery up: the old renewal may still run.
func (h *stepper) fenceDoneRecovering(in Input) {
	switch {
	case h.refuted != ReasonNone:
		h.loseToRefusal(h.refuted) // a read or a guarded write refused the lease while the fence was in flight
	case in.Err != nil:
		h.becomeLost(EventRecoveryFailed, Ending{Cause: CauseRenewalFailure, Err: in.Err})
	case in.Now >= h.deadline():
		h.deadlinePassed() // the keep-alive was stopped meanwhile: no deadline timer saw it
	default:
		h.stay(EventFenceDone)
		h.sendRenew(0, h.duration, in.Now)
	}
}

func (h *stepper) stepCallerCancelled(in Input) {
	if h.state == Acquiring {
		if in.Caller != 0 && in.Caller == h.renewCaller {
			h.renewCaller = 0
			h.move(EventAcquireAbandoned, Abandoned)
			h.resolve(in.Caller, Result{Err: ErrCallerCancelled})
		}
		return
	}
	for i, w := range h.waiters {
		if w.caller == in.Caller {
			h.waiters = append(h.waiters[:i], h.waiters[i+1:]...)
			h.stay(EventCallerCancelled)
			h.resolve(in.Caller, Result{Err: ErrCallerCancelled})
			return
		}
	}
	// The caller owns the command in flight (the runtime cancels that command itself), or
	// was answered already: nothing to do.
}
