package statemachine

import (
	"strconv"
	"time"
)

// OpID names one command the core asked the runtime to send. The runtime reports exactly
// one completion (InputCommandDone) per OpID and remembers which session carried it, so a
// later Fence effect can name the op instead of a session. Zero means "no op".
type OpID uint32

// CallerID names one waiting caller. The runtime assigns it (unique per handle while the
// caller waits; never 0) and receives exactly one EffectResolve per request that carries it.
// 32 bits keep the Handle small; the runtime skips 0 when its counter wraps.
type CallerID uint32

// Timer names one of a handle's two timers.
type Timer uint8

// The handle's timers.
const (
	TimerNone     Timer = iota
	TimerRenewal        // keep-alive: time to send the next renewal (rule RenewalDelay)
	TimerDeadline       // keep-alive: the lease deadline, last confirmed send + Duration (rule LeaseDeadlineEndsOwnership)
)

// Outcome is a command completion classified by the runtime (conn/ decides it).
type Outcome uint8

// Command outcomes. Err in the Input carries the error for NotSubmitted, Definite and
// Uncertain.
const (
	OutcomeOK           Outcome = iota + 1 // +OK / 1: applied
	OutcomeMismatch                        // nil / false / 0: the token did not match (or SET NX contended)
	OutcomeNotSubmitted                    // provably never reached the server; safe to retry
	OutcomeDefinite                        // the server answered with an error reply
	OutcomeUncertain                       // may have run: cancelled/timed out after the write, connection lost
)

// String names the outcome: "ok", "mismatch", "not-submitted", "definite",
// "uncertain" (the last three are conn's error classes).
func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeMismatch:
		return "mismatch"
	case OutcomeNotSubmitted:
		return "not-submitted"
	case OutcomeDefinite:
		return "definite"
	case OutcomeUncertain:
		return "uncertain"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// InputKind says what happened.
type InputKind uint8

// Input kinds. Fields of Input used by each kind are listed.
const (
	InputAcquire         InputKind = iota + 1 // Caller, TTL, KeepAlive: send the SET NX PX
	InputResetExpiry                          // Caller, TTL: manual renewal, TTL from now
	InputKeepAliveStart                       // Caller: start the keep-alive
	InputKeepAliveStop                        // Caller, Err: stop it (Err, if set, is the cause instead of a stop); resolved when no renewal is in flight
	InputRelease                              // Caller: release (shared with concurrent releases)
	InputClose                                // Caller: stop the keep-alive, then release; idempotent
	InputCallerCancelled                      // Caller: that caller's ctx ended while it waited
	InputCommandDone                          // Op, Outcome, Err, Unfenced: a command completed
	InputTimer                                // Timer, Seq: a timer armed by EffectArmTimer fired
	InputFenceDone                            // Op, Err: the fence of Op's session answered or failed
	InputObserve                              // (Now only): the runtime looks at the handle; a lease whose estimate ran out is no longer held
	InputWatch                                // (Now only): the lock's context exists: its end must be seen on time, with or without keep-alive
	InputOwnerRefuted                         // (Now only): an owner-compared read after a push found the key missing or another owner's
	InputAcquireSettled                       // Op, Outcome (OK: our token; Mismatch: not ours; Uncertain: unsettled), Err: the answer to EffectSettleAcquire
	InputGuardRefused                         // StaleFence: a guarded write's script found the key missing or another owner's (or, StaleFence, a larger fencing token in the fence record); nothing was written
)

// Input is one thing that happened to a handle. Now is monotonic time since an arbitrary
// origin shared by all inputs of the handle; it must never go backwards.
type Input struct {
	Kind      InputKind
	Outcome   Outcome
	Timer     Timer
	KeepAlive bool // InputAcquire: start an owned keep-alive on success
	Settle    bool // InputAcquire: the caller waits, so an uncertain SET is settled (fence, read) instead of abandoned
	// Drift is how early the handle gives the lease up (see Drift; nil: no margin). Every
	// input of a handle carries the same one: a step that sends a SET or renewal computes
	// its deadline with it then (a Handle keeps none, rule HeldLockIsSmall).
	Drift    *Drift
	Unfenced bool // InputCommandDone of a release or renewal: its session may not be fenced
	// StaleFence: InputGuardRefused because the fence record held a larger fencing token
	// (the lease key may still hold this handle's token) rather than the key not holding it.
	StaleFence bool
	Op         OpID
	Seq        uint32 // InputTimer: the Seq of the EffectArmTimer that armed it
	Now        time.Duration
	TTL        time.Duration
	Caller     CallerID
	Err        error
}

// Drift is how much earlier than the server a handle gives its lease up: Floor plus PPM
// millionths of the lease duration, like Redlock's clock drift factor. It absorbs a client
// clock running slower than the server's, the server's whole-millisecond expiry, and the
// delay between the deadline and the moment protected work sees its context cancelled (a
// timer, a mailbox, a mutex, the scheduler, a GC pause). The zero value gives nothing up.
type Drift struct {
	PPM   int64         // millionths of the lease duration; 10_000 is 1%
	Floor time.Duration // added to every margin
}

// DefaultDrift is Redlock's choice: 1% of the lease plus 2 ms.
func DefaultDrift() Drift { return Drift{PPM: 10_000, Floor: 2 * time.Millisecond} }

// Of returns the margin for a lease of duration d: Floor + d·PPM/10⁶, computed without
// overflow for any duration up to the maximum time.Duration. It is pure.
func (d Drift) Of(duration time.Duration) time.Duration {
	const million = 1_000_000
	if duration <= 0 {
		return d.Floor
	}
	return d.Floor + duration/million*time.Duration(d.PPM) + duration%million*time.Duration(d.PPM)/million
}

// EffectKind says what the runtime must do.
type EffectKind uint8

// Effect kinds. Fields of Effect used by each kind are listed.
const (
	EffectSendAcquire     EffectKind = iota + 1 // Op, TTL: SET key token NX PX ttl on the caller's ctx
	EffectSendRenew                             // Op, TTL, Caller (0 = keep-alive): compare-and-PEXPIRE
	EffectSendRelease                           // Op, Caller (the starter, whose ctx governs it): compare-and-delete
	EffectCleanupDelete                         // Op (of the SET): best-effort bounded background compare-and-delete
	EffectAbort                                 // Op: cancel that command's context (the deadline passed)
	EffectFence                                 // Op: fence the session that carried Op; answer with InputFenceDone
	EffectCancelKeepAlive                       // Ending: cancel the keep-alive context with why it ended
	EffectEndLease                              // Ending: the lease ended (release, loss, expiry): end the lock's context
	EffectArmTimer                              // Timer, At, Seq: (re)arm; a fire is reported with Seq
	EffectDisarmTimer                           // Timer: stop it; a late fire with an old Seq is ignored
	EffectResolve                               // Caller, Result: answer that caller
	EffectTransition                            // From, Event, To: the handle moved along a graph edge (trace only)
	EffectSettleAcquire                         // Op, Caller: fence the socket that carried the SET Op, read the key on a fresh session; answer with InputAcquireSettled
)

// Effect is one instruction for the runtime, returned in order. Order matters: for
// instance EffectCancelKeepAlive always precedes the EffectFence of the same loss.
type Effect struct {
	Kind   EffectKind
	Timer  Timer
	From   State
	To     State
	Event  Event
	Op     OpID
	Seq    uint32
	TTL    time.Duration
	At     time.Duration
	Caller CallerID
	Ending Ending // EffectCancelKeepAlive, EffectEndLease
	Result Result
}

// ReleaseOutcome is the result of a release (rule ReleaseOutcomes). The zero value means "not a release".
type ReleaseOutcome uint8

// Release outcomes.
const (
	ReleaseNone            ReleaseOutcome = iota
	ReleaseReleased                       // this handle's delete removed the key
	ReleaseAlreadyReleased                // the handle had released it already; nothing sent
	ReleaseNotOwned                       // the delete returned 0, or the handle was already lost
)

// String returns the outcome's name.
func (o ReleaseOutcome) String() string {
	switch o {
	case ReleaseReleased:
		return "Released"
	case ReleaseAlreadyReleased:
		return "AlreadyReleased"
	case ReleaseNotOwned:
		return "NotOwned"
	}
	return "None"
}

// Result answers one caller. For reset-expiry and acquisition OK means extended/acquired;
// for keep-alive start/stop OK means done. Release carries the release outcome. When Err is
// set, Outcome is the classification of the command failure that caused it (zero if the
// error is the core's own, e.g. ErrKeepAliveActive), so Close can swallow
// NotSubmitted/Uncertain errors while passing Definite ones through (rule CloseSwallowsWhatExpiryCovers).
type Result struct {
	OK      bool
	Release ReleaseOutcome
	Outcome Outcome
	Err     error
	// FenceErr is set for a caller whose uncertain command's fence failed
	// (InputFenceDone with an error): the command may still run.
	FenceErr error
}
