package statemachine

import "time"

// minRenewalGap is the 10 ms floor of the renewal delay (rule RenewalDelay in docs/rules.md).
const minRenewalGap = 10 * time.Millisecond

// RenewalRetryDelay is how long a keep-alive waits before sending again a renewal that
// provably did not run: an eighth of the time left, at least 10 ms and at most 1 s, so a few
// tries fit before the lease deadline without hammering an unreachable node. It is pure.
func RenewalRetryDelay(remaining time.Duration) time.Duration {
	return min(max(remaining/8, minRenewalGap), time.Second)
}

// RenewalDelay is the keep-alive delay before the next renewal, from the current Duration
// and the remaining estimate (rule RenewalDelay): base = remaining − duration/2; if base > 10 ms use it;
// else 0 when remaining ≤ 0; else 10 ms when remaining > 10 ms; else remaining/2, at least
// 1 ns. It is pure and safe for concurrent use.
func RenewalDelay(duration, remaining time.Duration) time.Duration {
	if base := remaining - duration/2; base > minRenewalGap {
		return base
	}
	if remaining <= 0 {
		return 0
	}
	if remaining > minRenewalGap {
		return minRenewalGap
	}
	return max(remaining/2, 1)
}

func (h *stepper) stepResetExpiry(in Input) {
	if h.state == Recovering {
		h.stay(EventResetRequested) // sent by pumpResets once the recovery confirmed the lease
		h.waiters = append(h.waiters, waiter{caller: in.Caller, ttl: in.TTL, kind: waitReset})
		return
	}
	if h.state != Held || h.RemainingEstimate(in.Now) == 0 {
		h.stay(EventResetRefused)
		h.resolve(in.Caller, Result{})
		return
	}
	h.stay(EventResetRequested)
	if h.renewOp != 0 {
		h.waiters = append(h.waiters, waiter{caller: in.Caller, ttl: in.TTL, kind: waitReset})
		return
	}
	h.sendRenew(in.Caller, in.TTL, in.Now)
}

// pumpResets sends the oldest queued reset once no renewal is in flight (rule ResetsInRequestOrder:
// the remaining estimate is checked again when the slot is taken). Once the handle has left
// Held, queued resets are answered false at once, whatever is still in flight.
func (h *stepper) pumpResets(now time.Duration) {
	if h.state == Recovering {
		return // queued resets wait for the recovery's outcome
	}
	for (h.renewOp == 0 || h.state != Held) && h.hasWaiter(waitReset) {
		queue := h.takeWaiters(waitReset)
		first := queue[0]
		h.waiters = append(h.waiters, queue[1:]...)
		if h.state != Held || h.RemainingEstimate(now) == 0 {
			h.stay(EventResetRefused)
			h.resolve(first.caller, Result{})
			continue
		}
		h.sendRenew(first.caller, first.ttl, now)
	}
}

// sendRenew sends a renewal; caller 0 means the keep-alive's own renewal.
func (h *stepper) sendRenew(caller CallerID, ttl, now time.Duration) {
	if !h.holding() || h.renewOp != 0 {
		panic("statemachine: renewal sent while not Held or with another in flight")
	}
	h.renewOp = h.nextOp()
	h.renewEnd = h.leaseEnd(now, ttl)
	h.renewTTL = ttl
	h.renewCaller = caller
	h.renewByKeep = caller == 0
	h.emit(Effect{Kind: EffectSendRenew, Op: h.renewOp, TTL: ttl, Caller: caller})
	if (h.keepAlive == keepAliveRunning || h.watched) && h.renewEnd < h.confirmedEnd {
		// A shortening renewal may apply before its reply: whoever watches the lease (the
		// keep-alive, or the lock's context) must see its deadline now, not at the reply
		// (rules ShorteningResetCountsAtOnce, ContextEndsByTheEarliestExpiryInFlight).
		h.armTimer(TimerDeadline, h.deadline())
	}
}

// stepRenewDone handles the completion of the renewal in flight.
func (h *stepper) stepRenewDone(in Input) {
	caller, byKeep := h.renewCaller, h.renewByKeep
	h.renewOp, h.renewCaller, h.renewByKeep = 0, 0, false
	failed := Result{Err: in.Err, Outcome: outcomeOf(in)}
	switch {
	case h.state == Recovering:
		h.recoveryDone(in)
	case h.state != Held && h.state != Releasing:
		h.stay(EventRenewalSettled)
		h.resolve(caller, failed)
	case in.Outcome == OutcomeOK:
		h.stay(EventRenewed)
		h.duration, h.confirmedEnd, h.renewErr = h.renewTTL, h.renewEnd, nil
		h.resolve(caller, Result{OK: true})
		h.scheduleKeepAlive(in.Now)
		h.rewatch()
	case in.Outcome == OutcomeMismatch:
		h.resolve(caller, Result{})
		h.becomeLost(EventRenewalRefused, Ending{Cause: CauseOwnershipLost, Reason: ReasonRefused})
	case in.Outcome == OutcomeUncertain && in.Unfenced:
		h.resolve(caller, failed)
		h.becomeLost(EventRenewalUncertainUnfenced, Ending{Cause: CauseOwnershipLost, Reason: ReasonRenewalUnknown, Err: in.Err})
	case in.Outcome == OutcomeUncertain && byKeep && h.state == Held && h.keepAlive == keepAliveRunning:
		h.interrupted(in.Op)
	case in.Outcome == OutcomeUncertain:
		if caller != 0 {
			h.waiters = append(h.waiters, waiter{caller: caller, kind: waitFenceReset})
		}
		h.becomeUncertain(EventRenewalUncertain, in.Err, false, ReasonRenewalUnknown, in.Op)
	case in.Outcome == OutcomeNotSubmitted && byKeep:
		h.stay(EventRenewalRetry)
		h.renewErr = in.Err
		h.retryRenewal(in.Now)
	case byKeep:
		h.becomeLost(EventRenewalFailed, Ending{Cause: CauseRenewalFailure, Err: in.Err})
	default:
		h.stay(EventResetRejected)
		h.resolve(caller, failed)
		h.scheduleKeepAlive(in.Now)
	}
}

// interrupted enters (or stays in) Recovering after a keep-alive renewal with an unknown
// outcome: the keep-alive context stays live, guarded by the deadline timer that is still
// armed; the renewal's session is fenced first.
func (h *stepper) interrupted(op OpID) {
	h.move(EventRenewalInterrupted, Recovering)
	h.emit(Effect{Kind: EffectFence, Op: op})
	h.fencesPending++
}

// retryRenewal arms the renewal timer to send a renewal that provably did not run again,
// while the keep-alive runs and the handle holds the lease (in Releasing the release
// decides instead).
func (h *stepper) retryRenewal(now time.Duration) {
	if h.keepAlive == keepAliveRunning && h.holding() {
		h.armTimer(TimerRenewal, now+RenewalRetryDelay(h.RemainingEstimate(now)))
	}
}

// recoveryDone settles a recovery renewal: OK proves the lease ours again from its send
// time; a false reply proves it lost; an unknown outcome is fenced again; one that did not
// run is retried. Without a running keep-alive nothing is retried.
func (h *stepper) recoveryDone(in Input) {
	running := h.keepAlive == keepAliveRunning
	switch {
	case in.Outcome == OutcomeOK:
		h.move(EventRecovered, Held)
		h.duration, h.confirmedEnd, h.renewErr = h.renewTTL, h.renewEnd, nil
		if running {
			h.scheduleKeepAlive(in.Now)
		} else {
			h.disarmTimers()
			h.rewatch()
		}
	case in.Outcome == OutcomeMismatch:
		h.becomeLost(EventRenewalRefused, Ending{Cause: CauseOwnershipLost, Reason: ReasonRefused})
	case in.Outcome == OutcomeUncertain && running:
		h.interrupted(in.Op)
	case in.Outcome == OutcomeUncertain:
		h.becomeUncertain(EventRenewalUncertain, in.Err, false, ReasonRenewalUnknown, in.Op)
	case in.Outcome == OutcomeNotSubmitted && running:
		h.stay(EventRenewalRetry)
		h.renewErr = in.Err
		h.retryRenewal(in.Now)
	default:
		h.becomeLost(EventRenewalFailed, Ending{Cause: CauseRenewalFailure, Err: in.Err})
	}
}

// outcomeOf returns the classification to report with an error result.
func outcomeOf(in Input) Outcome {
	if in.Err == nil {
		return 0
	}
	return in.Outcome
}

func (h *stepper) stepKeepAliveStart(in Input) {
	switch {
	case h.keepAlive != keepAliveNone && h.holding():
		h.stay(EventKeepAliveRefused)
		h.resolve(in.Caller, Result{Err: ErrKeepAliveActive})
	case h.state != Held || h.RemainingEstimate(in.Now) == 0:
		h.stay(EventKeepAliveRefused)
		h.resolve(in.Caller, Result{Err: ErrNotHeld})
	default:
		h.startKeepAlive(in.Now)
		h.resolve(in.Caller, Result{OK: true})
	}
}

func (h *stepper) startKeepAlive(now time.Duration) {
	h.stay(EventKeepAliveStarted)
	h.keepAlive, h.keepAliveEnded = keepAliveRunning, false
	h.scheduleKeepAlive(now)
}

// scheduleKeepAlive (re)arms the renewal timer (rule RenewalDelay) and the deadline timer at
// the last confirmed send + Duration (rules ResetReschedulesKeepAlive,
// LeaseDeadlineEndsOwnership). Only while the keep-alive runs in Held.
func (h *stepper) scheduleKeepAlive(now time.Duration) {
	if h.keepAlive != keepAliveRunning {
		return
	}
	if h.state == Releasing {
		h.armTimer(TimerDeadline, h.deadline())
		return
	}
	if h.state != Held {
		return
	}
	h.armTimer(TimerRenewal, now+RenewalDelay(h.duration, h.RemainingEstimate(now)))
	h.armTimer(TimerDeadline, h.deadline())
}

// stepKeepAliveStop stops the keep-alive (rule KeepAliveStopKeepsTheLock). With wait, the caller is answered when no
// keep-alive renewal is in flight and no fence is pending.
func (h *stepper) stepKeepAliveStop(in Input, wait bool) {
	h.stay(EventKeepAliveStop)
	if h.keepAlive == keepAliveRunning {
		h.keepAlive = keepAliveStopping
		h.disarmTimer(TimerRenewal)
		if !(h.renewOp != 0 && h.renewByKeep) && !h.watched {
			h.disarmTimer(TimerDeadline)
		} // else the deadline watch stays: a renewal in flight settles first, or the lock's context watches the lease
		if !h.keepAliveEnded {
			// The context ends now, not when the renewal in flight settles: the work it
			// protects must not outlive a lease nobody renews any more (invariant 4).
			h.keepAliveEnded = true
			h.emit(Effect{Kind: EffectCancelKeepAlive, Ending: Ending{Cause: CauseStopped, Err: in.Err}})
		}
	}
	if wait {
		h.waiters = append(h.waiters, waiter{caller: in.Caller, kind: waitStop})
	}
}

func (h *stepper) stepTimer(in Input) {
	switch {
	case in.Timer == TimerRenewal && in.Seq != 0 && in.Seq == h.renewalSeq:
		h.renewalSeq = 0
		h.renewalDue(in.Now)
	case in.Timer == TimerDeadline && in.Seq != 0 && in.Seq == h.deadlineSeq:
		h.deadlineSeq = 0
		h.deadlinePassed()
	}
	// Any other fire is stale (disarmed or re-armed since): ignored.
}

// renewalDue: one snapshot decides renew / wait for the release / lost. In Recovering the
// timer is the retry of a recovery renewal that did not run.
func (h *stepper) renewalDue(now time.Duration) {
	switch {
	case h.state == Releasing:
		h.stay(EventRenewalDue)
	case h.renewOp != 0:
		h.stay(EventRenewalDue) // the renewal in flight reschedules on completion
	case h.RemainingEstimate(now) == 0:
		h.deadlinePassed()
	case h.state == Recovering:
		h.stay(EventRenewalDue)
		if h.fencesPending == 0 {
			h.sendRenew(0, h.duration, now)
		}
	default:
		h.stay(EventRenewalDue)
		h.sendRenew(0, h.duration, now)
	}
}

// observe gives up a lease whose estimate ran out: a handle whose lease ran out locally is
// not held, whether or not a keep-alive's timer noticed it yet.
func (h *stepper) observe(now time.Duration) {
	if h.holding() && h.deadline() <= now {
		h.deadlinePassed()
	}
}

// deadlinePassed: with a command or a fence in flight the outcome is uncertain, so the
// command is aborted and its session fenced (a pending fence is waited for); otherwise
// ownership is simply lost.
func (h *stepper) deadlinePassed() {
	if h.renewOp == 0 && h.releaseOp == 0 && h.fencesPending == 0 {
		why := Ending{Cause: CauseOwnershipLost, Reason: ReasonDeadline, Err: h.renewErr}
		if h.keepAlive == keepAliveNone {
			why = Ending{Cause: CauseExpired} // nothing was renewing it: it simply ran out
		}
		h.becomeLost(EventDeadlineIdle, why)
		return
	}
	h.becomeUncertain(EventDeadlineInFlight, ErrOwnershipLost, true, ReasonDeadlineInFlight, h.releaseOp, h.renewOp)
}
