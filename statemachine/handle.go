package statemachine

import (
	"fmt"
	"time"
)

// keepAliveState is the lifecycle of the handle's single keep-alive slot.
type keepAliveState uint8

const (
	keepAliveNone     keepAliveState = iota
	keepAliveRunning                 // timers armed, renewals sent
	keepAliveStopping                // stop requested; waits for its renewal in flight (rule KeepAliveStopKeepsTheLock)
)

// waitKind says what a queued caller waits for.
type waitKind uint8

const (
	waitReset        waitKind = iota + 1 // a manual reset queued behind the renewal in flight
	waitRelease                          // a releaser waiting for the shared delete (joiner, or next starter)
	waitClose                            // a closer waiting for the keep-alive stop before releasing
	waitStop                             // a keep-alive stopper waiting for the renewal in flight / the fence
	waitFenceReset                       // a reset caller whose uncertain renewal is being fenced
	waitFenceRelease                     // a releaser whose uncertain delete is being fenced
)

// waiter is one caller parked in the handle.
type waiter struct {
	caller CallerID
	ttl    time.Duration // waitReset only
	kind   waitKind
}

// acquireWant is what InputAcquire asked for beyond the SET, as bits.
type acquireWant uint8

const (
	wantKeepAlive acquireWant = 1 << iota // start an owned keep-alive on success
	wantSettle                            // settle an uncertain SET (the caller waits)
)

func (w acquireWant) has(bit acquireWant) bool { return w&bit != 0 }

// Handle is the pure state of one managed lock handle. It is not safe for concurrent use:
// exactly one goroutine (the handle's actor, or the simulator) calls Step at a time. The
// zero value is a handle in Acquiring with nothing sent; feed it InputAcquire first. A
// Handle must not be copied after the first Step.
type Handle struct {
	state          State
	keepAlive      keepAliveState
	keepAliveEnded bool        // the current keep-alive context was cancelled already
	watched        bool        // the lock's context exists (InputWatch): its end is watched by the deadline timer
	leaseEnded     bool        // EffectEndLease was emitted
	renewByKeep    bool        // the renewal in flight belongs to the keep-alive
	acquireWants   acquireWant // what InputAcquire asked for (one byte: a Handle is 80 bytes)
	fencesPending  uint8
	lastOp         OpID
	renewOp        OpID // the SET (in Acquiring/Abandoned) or renewal in flight
	releaseOp      OpID // the shared delete in flight
	timerSeq       uint32
	renewalSeq     uint32 // Seq of the armed renewal timer; 0 = disarmed
	deadlineSeq    uint32 // Seq of the armed deadline timer; 0 = disarmed
	duration       time.Duration
	// confirmedEnd is the local deadline of the last confirmed acquire/extension: its send
	// timestamp + its TTL − the drift margin (Input.Drift), computed when it was sent, so a
	// handle keeps no drift of its own (rule HeldLockIsSmall).
	confirmedEnd   time.Duration
	renewEnd       time.Duration // the same for the SET or renewal in flight
	renewTTL       time.Duration
	renewCaller    CallerID
	releaseStarter CallerID
	// side holds the waiting callers and a fence's error between steps,
	// created the first time a step ends with either (a handle that never
	// has a caller waiting on another's command, nor a fence, has none).
	side *handleSide
}

// handleSide is the rarely used part of a Handle (see Handle.side).
type handleSide struct {
	waiters  []waiter
	fenceErr error
	renewErr error
	refuted  Reason
}

// State returns the handle's state. It does not block.
func (h *Handle) State() State { return h.state }

// Duration returns the acquired duration, or the one of the latest successful reset (rule DurationIsTheAppliedOne).
func (h *Handle) Duration() time.Duration { return h.duration }

// RemainingEstimate is the time left until the lease deadline (see LeaseDeadline), clamped
// at 0; 0 whenever the handle does not hold the lease (Held, or Recovering). It is a local
// estimate, not an ownership check.
func (h *Handle) RemainingEstimate(now time.Duration) time.Duration {
	if !h.holding() {
		return 0
	}
	return max(0, h.deadline()-now)
}

// LeaseDeadline returns the local monotonic time at which the lease estimate runs out, and
// false when the handle does not hold the lease. It is the last confirmed send timestamp +
// Duration − the drift margin, or earlier while a renewal with a shorter TTL is in flight:
// the server may already have applied that renewal, so its deadline (send timestamp + its
// TTL − its margin) counts until it settles.
func (h *Handle) LeaseDeadline() (time.Duration, bool) {
	return h.deadline(), h.holding()
}

// holding reports whether the handle counts as holding the lease: Held, or Recovering (an
// interrupted keep-alive renewal is being settled, the confirmed deadline still lasts).
func (h *Handle) holding() bool { return h.state == Held || h.state == Recovering }

// deadline is the earliest time the server-side lease may expire, less the drift margin:
// the confirmed deadline, or the deadline of a renewal in flight if that is earlier (a
// shortening reset that may have applied already).
func (h *Handle) deadline() time.Duration {
	d := h.confirmedEnd
	if h.renewOp != 0 && (h.holding() || h.state == Releasing) {
		d = min(d, h.renewEnd)
	}
	return d
}

// leaseEnd is the local deadline of a lease of ttl sent at sentAt, with the step's drift.
func (h *stepper) leaseEnd(sentAt, ttl time.Duration) time.Duration {
	if h.drift == nil {
		return sentAt + ttl
	}
	return sentAt + ttl - h.drift.Of(ttl)
}

// IsReleased reports whether the handle no longer counts as holding the lock: the state is
// not Held, or the local estimate reached 0 although the server was never asked (rule NotHeldPastTheEstimate).
func (h *Handle) IsReleased(now time.Duration) bool { return h.RemainingEstimate(now) == 0 }

// KeepAliveActive reports whether a keep-alive occupies the handle's slot (running or
// stopping).
func (h *Handle) KeepAliveActive() bool { return h.keepAlive != keepAliveNone }

// Step applies one input and appends the resulting effects to out, in the order the
// runtime must execute them, returning the extended slice (pass a reused buffer with
// length 0 to avoid allocation). It panics on programmer errors: an input that is illegal
// in the current state (for example ResetExpiry before the acquisition succeeded), a
// completion for an op that is not in flight, or time going backwards.
func (h *Handle) Step(in Input, out []Effect) []Effect {
	s := stepper{Handle: h, out: out, drift: in.Drift}
	if h.side != nil {
		s.waiters, s.fenceErr, s.renewErr, s.refuted = h.side.waiters, h.side.fenceErr, h.side.renewErr, h.side.refuted
	}
	s.step(in)
	s.keepSide()
	return s.out
}

// stepper is one Step in progress: the handle, the effects emitted so far,
// and the handle's waiting callers and fence error, taken from its side
// and put back when the step ends. Keeping these here, not in the Handle,
// saves every handle (one per lock, held or not) 64 bytes it would only
// use during a step, while callers wait on another's command or during a
// fence.
type stepper struct {
	*Handle
	out      []Effect
	drift    *Drift // the input's (Input.Drift)
	waiters  []waiter
	fenceErr error // the uncertain error waiting callers get after the fence
	// renewErr is the error of the last keep-alive renewal that did not run and was
	// retried, nil once one is confirmed: a deadline loss says why no renewal came
	// (rule DeadlineLossSaysWhy).
	renewErr error
	// refuted records, by its reason, a refusal (a push read's, a guarded write's) that
	// came while a recovery's fence was in flight (stepOwnerRefuted): the handle is lost
	// once the fence answers. ReasonNone: none.
	refuted Reason
}

// keepSide puts the step's waiters and fence error back into the handle.
func (h *stepper) keepSide() {
	if h.side == nil {
		if len(h.waiters) == 0 && h.fenceErr == nil && h.renewErr == nil && h.refuted == ReasonNone {
			return
		}
		h.Handle.side = &handleSide{}
	}
	h.side.waiters, h.side.fenceErr, h.side.renewErr, h.side.refuted = h.waiters, h.fenceErr, h.renewErr, h.refuted
}

// step applies one input (see Step).
func (h *stepper) step(in Input) {
	if in.Kind >= InputResetExpiry && in.Kind <= InputClose {
		h.observe(in.Now) // a request first sees a lease whose estimate ran out as lost
	}
	switch in.Kind {
	case InputAcquire:
		h.stepAcquire(in)
	case InputResetExpiry:
		h.stepResetExpiry(in)
	case InputKeepAliveStart:
		h.stepKeepAliveStart(in)
	case InputKeepAliveStop:
		h.stepKeepAliveStop(in, true)
	case InputRelease:
		h.stepRelease(in.Caller, in.Now)
	case InputClose:
		h.stepClose(in)
	case InputCallerCancelled:
		h.stepCallerCancelled(in)
	case InputCommandDone:
		h.stepCommandDone(in)
	case InputTimer:
		h.stepTimer(in)
	case InputFenceDone:
		h.stepFenceDone(in)
	case InputObserve:
		h.observe(in.Now)
	case InputWatch:
		h.stepWatch()
	case InputOwnerRefuted:
		h.stepOwnerRefuted()
	case InputAcquireSettled:
		h.stepAcquireSettled(in)
	case InputGuardRefused:
		h.stepGuardRefused(in.StaleFence)
	default:
		panic(fmt.Sprintf("statemachine: unknown input kind %d", in.Kind))
	}
	h.pump(in.Now)
}

// move follows the edge (h.state, e), panics if the graph has none or it leads elsewhere
// than want, and records the transition. It is the only place that changes h.state.
func (h *stepper) move(e Event, want State) {
	to, ok := Next(h.state, e)
	if !ok || to != want {
		panic(fmt.Sprintf("statemachine: invalid transition [%s -%s-> %s]", h.state, e, want))
	}
	h.emit(Effect{Kind: EffectTransition, From: h.state, Event: e, To: to})
	h.state = to
}

// stay follows a self-loop edge.
func (h *stepper) stay(e Event) { h.move(e, h.state) }

func (h *stepper) emit(e Effect) { h.out = append(h.out, e) }

func (h *stepper) resolve(caller CallerID, r Result) {
	if caller != 0 {
		h.emit(Effect{Kind: EffectResolve, Caller: caller, Result: r})
	}
}

func (h *stepper) nextOp() OpID {
	h.lastOp++
	if h.lastOp == 0 {
		h.lastOp++
	}
	return h.lastOp
}

func (h *stepper) armTimer(t Timer, at time.Duration) {
	h.timerSeq++
	if h.timerSeq == 0 {
		h.timerSeq++
	}
	if t == TimerRenewal {
		h.renewalSeq = h.timerSeq
	} else {
		h.deadlineSeq = h.timerSeq
	}
	h.emit(Effect{Kind: EffectArmTimer, Timer: t, At: at, Seq: h.timerSeq})
}

func (h *stepper) disarmTimers() {
	h.disarmTimer(TimerRenewal)
	h.disarmTimer(TimerDeadline)
}

// disarmTimer disarms timer t if it is armed.
func (h *stepper) disarmTimer(t Timer) {
	seq := &h.renewalSeq
	if t == TimerDeadline {
		seq = &h.deadlineSeq
	}
	if *seq != 0 {
		*seq = 0
		h.emit(Effect{Kind: EffectDisarmTimer, Timer: t})
	}
}

// endKeepAlive cancels the keep-alive context once with why, and frees the slot. A
// watched lease keeps its deadline timer while it is held.
func (h *stepper) endKeepAlive(why Ending) {
	h.disarmTimer(TimerRenewal)
	if !h.watched || !(h.holding() || h.state == Releasing) {
		h.disarmTimer(TimerDeadline)
	}
	if h.keepAlive != keepAliveNone && !h.keepAliveEnded {
		h.keepAliveEnded = true
		h.emit(Effect{Kind: EffectCancelKeepAlive, Ending: why})
	}
	h.keepAlive = keepAliveNone
}

// endLease reports, once, that the handle stopped holding the lease and why.
func (h *stepper) endLease(why Ending) {
	if !h.leaseEnded {
		h.leaseEnded = true
		h.emit(Effect{Kind: EffectEndLease, Ending: why})
	}
}

// stepWatch starts watching the lease's end: without a keep-alive the deadline timer is
// armed at the lease deadline, so the lock's context ends on time.
func (h *stepper) stepWatch() {
	h.watched = true
	if (h.holding() || h.state == Releasing) && h.keepAlive == keepAliveNone {
		h.armTimer(TimerDeadline, h.deadline())
	}
}

// rewatch re-arms the deadline timer of a watched lease without a running keep-alive after
// its deadline moved (a confirmed reset).
func (h *stepper) rewatch() {
	if h.watched && (h.holding() || h.state == Releasing) && h.keepAlive != keepAliveRunning {
		h.armTimer(TimerDeadline, h.deadline())
	}
}

// takeWaiters removes and returns the waiters of kind k, in request order.
func (h *stepper) takeWaiters(k waitKind) []waiter {
	var taken []waiter
	kept := h.waiters[:0]
	for _, w := range h.waiters {
		if w.kind == k {
			taken = append(taken, w)
		} else {
			kept = append(kept, w)
		}
	}
	h.keepWaiters(kept)
	return taken
}

func (h *stepper) hasWaiter(k waitKind) bool {
	for _, w := range h.waiters {
		if w.kind == k {
			return true
		}
	}
	return false
}

// resolveAll answers the waiters of kind k with r, in request order, and removes them (in
// place: resolve does not touch the list, so no copy of the taken ones is needed).
func (h *stepper) resolveAll(k waitKind, r Result) {
	kept := h.waiters[:0]
	for _, w := range h.waiters {
		if w.kind == k {
			h.resolve(w.caller, r)
		} else {
			kept = append(kept, w)
		}
	}
	h.keepWaiters(kept)
}

// keepWaiters makes kept, a prefix of h.waiters' backing array, the waiting
// list (nil when empty), clearing what it no longer holds.
func (h *stepper) keepWaiters(kept []waiter) {
	clear(h.waiters[len(kept):])
	h.waiters = kept
	if len(h.waiters) == 0 {
		h.waiters = nil
	}
}

// pump runs the follow-up work an input may have unblocked: finishing a keep-alive stop,
// answering stoppers, releasing for closers, sending the next queued reset, and starting
// the next release attempt after a not-submitted one (rule ReleaseHandedToAJoiner).
func (h *stepper) pump(now time.Duration) {
	h.observe(now)
	if h.keepAlive == keepAliveStopping && !(h.renewOp != 0 && h.renewByKeep) {
		h.endKeepAlive(Ending{Cause: CauseStopped})
		if h.state == Recovering && h.fencesPending == 0 {
			// A recovery waiting to retry a renewal that did not run: without the keep-alive
			// nothing retries it, and ownership cannot be confirmed.
			h.becomeLost(EventRenewalFailed, Ending{Cause: CauseOwnershipLost, Reason: ReasonRenewalUnknown})
		}
	}
	if h.keepAlive != keepAliveStopping && h.fencesPending == 0 && h.state != Recovering {
		h.resolveAll(waitStop, Result{OK: true})
		for _, w := range h.takeWaiters(waitClose) {
			h.stepRelease(w.caller, now)
		}
	}
	h.pumpResets(now)
	if h.state == Held && h.releaseOp == 0 {
		if joiners := h.takeWaiters(waitRelease); len(joiners) > 0 {
			h.startRelease(joiners[0].caller, now)
			h.waiters = append(h.waiters, joiners[1:]...)
		}
	}
}
