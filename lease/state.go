package lease

import (
	"fmt"
	"log/slog"

	sm "github.com/respire-go/respire/statemachine"
)

// State is the lifecycle state of a *Lock (see docs/states.md). It renders
// as its name with fmt, slog (text and JSON) and encoding.TextMarshaler.
type State uint8

// The states a *Lock can be seen in; a Lock is handed out only Held.
const (
	// StateHeld: the lease is ours, as far as the local estimate knows.
	StateHeld State = iota + 1
	// StateReleasing: a release is in flight.
	StateReleasing
	// StateRecovering: a keep-alive renewal was interrupted (its outcome
	// unknown) while the lease deadline lasts: its connection is being
	// fenced and an owner-compared renewal on a fresh one will settle
	// whether the lease is still ours. The lock's context stays live,
	// guarded by the lease deadline.
	StateRecovering
	// StateUncertain: a command's outcome is unknown and ownership was given
	// up; its connection is being fenced.
	StateUncertain
	// StateLost: ownership is lost for good (expired, taken, or uncertain).
	StateLost
	// StateReleased: this handle released the lock.
	StateReleased
)

var stateNames = [...]string{
	StateHeld:       "Held",
	StateReleasing:  "Releasing",
	StateRecovering: "Recovering",
	StateUncertain:  "Uncertain",
	StateLost:       "Lost",
	StateReleased:   "Released",
}

// String returns the state's name, for example "Held".
func (s State) String() string {
	if s != 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// MarshalText renders the state as its name.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LogValue logs the state as its name.
func (s State) LogValue() slog.Value { return slog.StringValue(s.String()) }

// stateOf maps the handle's state. Acquiring, NotAcquired and Abandoned are
// never seen on a handed-out Lock.
func stateOf(s sm.State) State {
	switch s {
	case sm.Held:
		return StateHeld
	case sm.Releasing:
		return StateReleasing
	case sm.Recovering:
		return StateRecovering
	case sm.Uncertain:
		return StateUncertain
	case sm.Released:
		return StateReleased
	}
	return StateLost
}

// ReleaseOutcome is the result of Lock.Release. It renders as its name
// with fmt, slog and encoding.TextMarshaler. The zero value, "NoOutcome",
// comes with an error that says what happened instead (nothing sent, a
// server error reply: the lock is still held).
type ReleaseOutcome uint8

// Release outcomes.
const (
	// Released: this call's delete removed our lock.
	Released ReleaseOutcome = iota + 1
	// AlreadyReleased: the handle had released it already; nothing sent.
	AlreadyReleased
	// NotOwned: the delete found another owner or no key, or the handle had
	// lost the lock (nothing sent then).
	NotOwned
	// ReleaseUnknown: the delete may or may not have run (it comes with an
	// error matching ErrOutcomeUnknown); the handle no longer counts on the
	// lock, and its connection is fenced.
	ReleaseUnknown
)

var outcomeNames = [...]string{0: "NoOutcome", Released: "Released", AlreadyReleased: "AlreadyReleased",
	NotOwned: "NotOwned", ReleaseUnknown: "Unknown"}

// String returns the outcome's name, for example "Released".
func (o ReleaseOutcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("ReleaseOutcome(%d)", uint8(o))
}

// MarshalText renders the outcome as its name.
func (o ReleaseOutcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// LogValue logs the outcome as its name.
func (o ReleaseOutcome) LogValue() slog.Value { return slog.StringValue(o.String()) }

func releaseOutcomeOf(o sm.ReleaseOutcome) ReleaseOutcome {
	switch o {
	case sm.ReleaseReleased:
		return Released
	case sm.ReleaseAlreadyReleased:
		return AlreadyReleased
	case sm.ReleaseNotOwned:
		return NotOwned
	}
	return 0
}
