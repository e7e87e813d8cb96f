package statemachine

import "time"

// minRenewalGap is the 10 ms floor of the K2 renewal delay.
const minRenewalGap = 10 * time.Millisecond

// RenewalDelay is the keep-alive delay before the next renewal, from the current Duration
// and the remaining estimate (K2): base = remaining − duration/2; if base > 10 ms use it;
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

func (h *Handle) stepResetExpiry(in Input) {
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

// pumpResets sends the oldest queued reset once no renewal is in flight (H7: the
// remaining estimate is checked again when the slot is taken). Once the handle has left
// Held, queued resets are answered false at once, whatever is still in flight.
func (h *Handle) pumpResets(now time.Duration) {
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
func (h *Handle) sendRenew(caller CallerID, ttl, now time.Duration) {
	if h.state != Held || h.renewOp != 0 {
		panic("statemachine: renewal sent while not Held or with another in flight")
	}
	h.renewOp = h.nextOp()
	h.renewSentAt = now
	h.renewTTL = ttl
	h.renewCaller = caller
	h.renewByKeep = caller == 0
	h.emit(Effect{Kind: EffectSendRenew, Op: h.renewOp, TTL: ttl, Caller: caller})
	if h.keepAlive == keepAliveRunning && now+ttl < h.confirmedAt+h.duration {
		// A shortening renewal may apply before its reply: watch its deadline now (K5).
		h.armTimer(TimerDeadline, h.deadline())
	}
}

// stepRenewDone handles the completion of the renewal in flight.
func (h *Handle) stepRenewDone(in Input) {
	caller, byKeep := h.renewCaller, h.renewByKeep
	h.renewOp, h.renewCaller, h.renewByKeep = 0, 0, false
	failed := Result{Err: in.Err, Outcome: outcomeOf(in)}
	switch {
	case h.state != Held && h.state != Releasing:
		h.stay(EventRenewalSettled)
		h.resolve(caller, failed)
	case in.Outcome == OutcomeOK:
		h.stay(EventRenewed)
		h.duration, h.confirmedAt = h.renewTTL, h.renewSentAt
		h.resolve(caller, Result{OK: true})
		h.scheduleKeepAlive(in.Now)
	case in.Outcome == OutcomeMismatch:
		h.resolve(caller, Result{})
		h.becomeLost(EventRenewalRefused, CauseOwnershipLost, nil)
	case in.Outcome == OutcomeUncertain:
		if caller != 0 {
			h.waiters = append(h.waiters, waiter{caller: caller, kind: waitFenceReset})
		}
		h.becomeUncertain(EventRenewalUncertain, in.Err, false, in.Op)
	case byKeep:
		h.becomeLost(EventRenewalFailed, CauseRenewalFailure, in.Err)
	default:
		h.stay(EventResetRejected)
		h.resolve(caller, failed)
		h.scheduleKeepAlive(in.Now)
	}
}

// outcomeOf returns the classification to report with an error result.
func outcomeOf(in Input) Outcome {
	if in.Err == nil {
		return 0
	}
	return in.Outcome
}

func (h *Handle) stepKeepAliveStart(in Input) {
	switch {
	case h.keepAlive != keepAliveNone && h.state == Held:
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

func (h *Handle) startKeepAlive(now time.Duration) {
	h.stay(EventKeepAliveStarted)
	h.keepAlive, h.keepAliveEnded = keepAliveRunning, false
	h.scheduleKeepAlive(now)
}

// scheduleKeepAlive (re)arms the renewal timer per K2 and the deadline timer at the last
// confirmed send + Duration (K3, K5). Only while the keep-alive runs in Held.
func (h *Handle) scheduleKeepAlive(now time.Duration) {
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

// stepKeepAliveStop stops the keep-alive (K10). With wait, the caller is answered when no
// keep-alive renewal is in flight and no fence is pending.
func (h *Handle) stepKeepAliveStop(in Input, wait bool) {
	h.stay(EventKeepAliveStop)
	if h.keepAlive == keepAliveRunning {
		h.keepAlive = keepAliveStopping
		h.disarmTimer(TimerRenewal)
		if !(h.renewOp != 0 && h.renewByKeep) {
			h.disarmTimer(TimerDeadline)
		} // else the deadline watch stays until the renewal in flight settles (K5)
		if !h.keepAliveEnded {
			// The context ends now, not when the renewal in flight settles: the work it
			// protects must not outlive a lease nobody renews any more (invariant 4).
			h.keepAliveEnded = true
			h.emit(Effect{Kind: EffectCancelKeepAlive, Cause: CauseStopped})
		}
	}
	if wait {
		h.waiters = append(h.waiters, waiter{caller: in.Caller, kind: waitStop})
	}
}

func (h *Handle) stepTimer(in Input) {
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

// renewalDue is K4: one snapshot decides renew / wait for the release / lost.
func (h *Handle) renewalDue(now time.Duration) {
	switch {
	case h.state == Releasing:
		h.stay(EventRenewalDue)
	case h.renewOp != 0:
		h.stay(EventRenewalDue) // the renewal in flight reschedules on completion
	case h.RemainingEstimate(now) == 0:
		h.becomeLost(EventDeadlineIdle, CauseOwnershipLost, nil)
	default:
		h.stay(EventRenewalDue)
		h.sendRenew(0, h.duration, now)
	}
}

// deadlinePassed is K5: with a command in flight the outcome is uncertain, so it is
// aborted and its session fenced; otherwise ownership is simply lost.
func (h *Handle) deadlinePassed() {
	if h.renewOp == 0 && h.releaseOp == 0 {
		h.becomeLost(EventDeadlineIdle, CauseOwnershipLost, nil)
		return
	}
	h.becomeUncertain(EventDeadlineInFlight, ErrOwnershipLost, true, h.releaseOp, h.renewOp)
}
