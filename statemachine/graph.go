// Package statemachine is the pure (sans-I/O) core of a managed lease-lock handle.
//
// This package is part of respire-go's implementation: applications use
// the lease and coordination packages. Its API may change in any release,
// without notice; it carries no compatibility promise.
//
// A Handle takes one Input at a time (a user request, a command completion with its
// classified Outcome, a timer firing, a fence completion) and appends Effects as data
// (send a renewal, send a release, fence a session, cancel the keep-alive context, resolve a
// caller, arm or disarm a timer). It never touches sockets, clocks or goroutines: every
// Input carries Now, a monotonic time.Duration since an arbitrary origin. The production
// actor and the deterministic simulator drive the same Handle.
//
// The state graph is defined once (see [Graph]); looplab/fsm validates it at init and renders
// docs/states.md. Each Handle stores only a small State; the legal next state comes from an
// immutable [NumStates][NumEvents] table built from the graph at init.
//
// # Driving a Handle
//
//   - One goroutine at a time calls Step; Step never blocks, allocates only when a caller
//     is parked (queued reset, release joiner), and appends to the caller's buffer.
//   - Start with a zero Handle and InputAcquire. The runtime executes EffectSend* and later
//     reports exactly one InputCommandDone per OpID with a classified Outcome; it must
//     remember which session carried each op so EffectFence/EffectAbort can name it.
//   - CallerIDs are chosen by the runtime (nonzero, unique while waiting); each request
//     gets exactly one EffectResolve. InputCallerCancelled answers a parked caller with
//     ErrCallerCancelled; for the caller whose command is in flight it does nothing (the
//     runtime cancels that command's context, which yields NotSubmitted or Uncertain).
//   - Timers: EffectArmTimer{Timer, At, Seq} replaces any earlier arming of that Timer;
//     report the fire as InputTimer{Timer, Seq}. Stale fires are ignored.
//   - EffectFence is answered by InputFenceDone{Op, Err}.
//   - Handles returned to the user leave Acquiring; NotAcquired/Abandoned handles are never
//     returned and only receive late completions.
package statemachine

import "fmt"

// State is the lifecycle state of a lock handle. The zero value is Acquiring.
type State uint8

// The handle states. Released, Lost, NotAcquired and Abandoned are terminal.
const (
	Acquiring   State = iota // the SET NX PX has been, or is about to be, sent
	Held                     // the handle believes it owns the lease
	Releasing                // one shared compare-and-delete is in flight
	Recovering               // a keep-alive renewal was interrupted; fence, then a fresh owner-compared renewal
	Uncertain                // ownership was given up because a write may have run; a fence is in flight
	Lost                     // ownership is lost or was never provable; nothing more is sent
	Released                 // this handle's compare-and-delete removed the key
	NotAcquired              // the SET NX found another owner; no handle is returned
	Abandoned                // the acquisition failed or was cancelled; no handle is returned
	NumStates                // number of states; not a state
)

var stateNames = [NumStates]string{
	"Acquiring", "Held", "Releasing", "Recovering", "Uncertain", "Lost", "Released", "NotAcquired", "Abandoned",
}

// String returns the state's name as used in docs/states.md.
func (s State) String() string {
	if s < NumStates {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Terminal reports whether no edge leaves s for another state.
func (s State) Terminal() bool {
	return s == Released || s == Lost || s == NotAcquired || s == Abandoned
}

// Event names an edge label of the graph. Step decides which Event an Input causes.
type Event uint8

// The graph's events; see Graph for the edges each one labels.
const (
	EventAcquired Event = iota
	EventContended
	EventAcquireFailed
	EventAcquireAbandoned
	EventAcquireSettled
	EventResetRequested
	EventResetRefused
	EventRenewalDue
	EventRenewed
	EventResetRejected
	EventRenewalRefused
	EventRenewalFailed
	EventRenewalUncertain
	EventRenewalSettled
	EventRenewalInterrupted
	EventRenewalRetry
	EventRecovered
	EventRecoveryFailed
	EventDeadlineInFlight
	EventDeadlineIdle
	EventFenceDone
	EventKeepAliveStarted
	EventKeepAliveRefused
	EventKeepAliveStop
	EventReleaseStarted
	EventReleaseJoined
	EventReleaseDeferred
	EventReleaseAnswered
	EventReleased
	EventReleaseNotOwned
	EventReleaseNotSubmitted
	EventReleaseRefused
	EventReleaseUncertain
	EventReleaseUncertainUnfenced
	EventRenewalUncertainUnfenced
	EventReleaseSettled
	EventCallerCancelled
	EventOwnerReadRefused
	EventAcquireSettling
	EventAcquireConfirmed
	EventAcquireNotTaken
	EventGuardRefused
	NumEvents // number of events; not an event
)

var eventNames = [NumEvents]string{
	"acquired", "contended", "acquire-failed", "acquire-abandoned", "acquire-settled",
	"reset-requested", "reset-refused", "renewal-due", "renewed", "reset-rejected",
	"renewal-refused", "renewal-failed", "renewal-uncertain", "renewal-settled",
	"renewal-interrupted", "renewal-retry", "recovered", "recovery-failed",
	"deadline-in-flight", "deadline-idle", "fence-done",
	"keepalive-started", "keepalive-refused", "keepalive-stop",
	"release-started", "release-joined", "release-deferred", "release-answered", "released",
	"release-not-owned", "release-not-submitted", "release-refused", "release-uncertain", "release-uncertain-unfenced",
	"renewal-uncertain-unfenced",
	"release-settled", "caller-cancelled", "owner-read-refused",
	"acquire-settling", "acquire-confirmed", "acquire-not-taken", "guard-refused",
}

// String returns the event's label as used in docs/states.md.
func (e Event) String() string {
	if e < NumEvents {
		return eventNames[e]
	}
	return fmt.Sprintf("Event(%d)", uint8(e))
}
