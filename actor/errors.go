package actor

import (
	"errors"
	"fmt"
	"strings"

	sm "github.com/respire-go/respire/statemachine"
)

// Errors of the managed locks that are the driver's own. Package lease
// re-exports them (and statemachine's and conn's sentinels), with the same
// values, so errors.Is works whichever package the caller names.
var (
	// ErrNotAcquired: Acquire found the lock held by another owner for its
	// whole wait.
	ErrNotAcquired = errors.New("lease: not acquired: another owner holds the lock")
	// ErrFencePending: the call's ctx ended while the connection that carried
	// an uncertain command of this lock was still being fenced (CLIENT KILL
	// not answered yet). The lock is no longer held; a command of it may
	// still run until the fence answers, and Shutdown waits for that.
	ErrFencePending = errors.New("lease: the fence of an uncertain command is still pending")
	// ErrFencingNotPermitted matches every *PermissionError: fenced renewal
	// needs CLIENT ID and CLIENT KILL and the server refused one of them.
	ErrFencingNotPermitted = errors.New("lease: renewal needs CLIENT ID and CLIENT KILL permission")
)

// LossReason says how ownership was lost.
type LossReason uint8

// The reasons of a *LossError.
const (
	// LossRefused: a renewal or the release answered that the key is not
	// ours (it expired, or another owner holds it).
	LossRefused LossReason = iota + 1
	// LossRenewalUnknown: a renewal's outcome is unknown (LossError.Err
	// says why); its connection was fenced.
	LossRenewalUnknown
	// LossReleaseUnknown: the release's outcome is unknown (LossError.Err
	// says why); its connection was fenced.
	LossReleaseUnknown
	// LossDeadline: the lease deadline passed with no confirmed renewal.
	// When renewals were refused with a reply proving they did not run
	// (READONLY, LOADING, CLUSTERDOWN, …) and retried, LossError.Err is the
	// last one's error: why no renewal was confirmed.
	LossDeadline
	// LossDeadlineInFlight: the lease deadline passed while a renewal or
	// release was still in flight; its connection was fenced. LossError.Err
	// is the last retried renewal's error, as for LossDeadline.
	LossDeadlineInFlight
	// LossReadRefused: the key changed on the server (a push said so) and
	// the owner-compared read that followed found it deleted, expired or
	// holding another owner's token (see WithoutPush).
	LossReadRefused
	// LossGuardRefused: a guarded write's script found the key deleted or
	// another owner's, and wrote nothing.
	LossGuardRefused
	// LossFenceRefused: a guarded write's script found a larger fencing
	// token in the fence record (a later holder wrote through the lock's
	// counter), and wrote nothing.
	LossFenceRefused
)

var lossReasonNames = [...]string{
	LossRefused:          "refused",
	LossRenewalUnknown:   "renewal-outcome-unknown",
	LossReleaseUnknown:   "release-outcome-unknown",
	LossDeadline:         "deadline",
	LossDeadlineInFlight: "deadline-in-flight",
	LossReadRefused:      "read-refused",
	LossGuardRefused:     "guard-refused",
	LossFenceRefused:     "fence-refused",
}

var lossReasonTexts = [...]string{
	LossRefused:          "the server answered that the key is not ours",
	LossRenewalUnknown:   "a renewal's outcome is unknown",
	LossReleaseUnknown:   "the release's outcome is unknown",
	LossDeadline:         "the lease deadline passed with no confirmed renewal",
	LossDeadlineInFlight: "the lease deadline passed with a command in flight",
	LossReadRefused:      "a read after the key changed found it deleted or another owner's",
	LossGuardRefused:     "a guarded write found the key deleted or another owner's",
	LossFenceRefused:     "a guarded write found a larger fencing token in the fence record",
}

// String returns the reason's name, for example "deadline".
func (r LossReason) String() string {
	if int(r) < len(lossReasonNames) && r != 0 {
		return lossReasonNames[r]
	}
	return fmt.Sprintf("LossReason(%d)", uint8(r))
}

// MarshalText renders the reason as its name (for JSON and slog).
func (r LossReason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// LossError is the cause of a lock's or keep-alive's context when
// ownership was lost: Reason says how, Err the error behind it (the
// renewal's or release's error; for the deadlines the last retried
// renewal's error, if any; nil for LossRefused).
// It matches ErrOwnershipLost and, through Err, the transport sentinels.
type LossError struct {
	Reason LossReason
	Err    error
}

// Error describes the loss without secrets.
func (e *LossError) Error() string {
	text := "lease: ownership lost"
	if int(e.Reason) < len(lossReasonTexts) && e.Reason != 0 {
		text += ": " + lossReasonTexts[e.Reason]
	}
	if e.Err != nil {
		text += ": " + strings.TrimPrefix(e.Err.Error(), "lease: ")
	}
	return text
}

// Unwrap returns the error behind the loss, if any.
func (e *LossError) Unwrap() error { return e.Err }

// Is makes a LossError match ErrOwnershipLost; the transport sentinels of
// its Err match through Unwrap.
func (e *LossError) Is(target error) bool {
	return target == sm.ErrOwnershipLost
}

// RenewalFailureError is the cause when a renewal failed with an error (a
// server error reply, or a fence of an interrupted renewal that failed): the
// handle counts the lock as lost. It matches ErrOwnershipLost; Unwrap
// returns the renewal's error.
type RenewalFailureError struct {
	Err error
}

// Error describes the failure without secrets.
func (e *RenewalFailureError) Error() string {
	return "lease: ownership lost: renewal failed: " + strings.TrimPrefix(fmt.Sprint(e.Err), "lease: ")
}

// Unwrap returns the renewal's error.
func (e *RenewalFailureError) Unwrap() error { return e.Err }

// Is makes a renewal failure match ErrOwnershipLost; the transport
// sentinels of its Err match through Unwrap.
func (e *RenewalFailureError) Is(target error) bool {
	return target == sm.ErrOwnershipLost
}

// endingError is the context cause for why a lease or keep-alive ended.
func endingError(e sm.Ending) error {
	switch e.Cause {
	case sm.CauseReleased:
		return sm.ErrReleased
	case sm.CauseStopped:
		if e.Err != nil {
			return e.Err // ErrClientClosed
		}
		return sm.ErrKeepAliveStopped
	case sm.CauseExpired:
		return sm.ErrExpired
	case sm.CauseRenewalFailure:
		return &RenewalFailureError{Err: e.Err}
	case sm.CauseOwnershipLost:
		return &LossError{Reason: LossReasonOf(e.Reason), Err: e.Err}
	}
	return sm.ErrOwnershipLost
}

// LossReasonOf returns the LossReason of the core's reason (0 for none).
func LossReasonOf(r sm.Reason) LossReason {
	switch r {
	case sm.ReasonRefused:
		return LossRefused
	case sm.ReasonRenewalUnknown:
		return LossRenewalUnknown
	case sm.ReasonReleaseUnknown:
		return LossReleaseUnknown
	case sm.ReasonDeadline:
		return LossDeadline
	case sm.ReasonDeadlineInFlight:
		return LossDeadlineInFlight
	case sm.ReasonReadRefused:
		return LossReadRefused
	case sm.ReasonGuardRefused:
		return LossGuardRefused
	case sm.ReasonFenceRefused:
		return LossFenceRefused
	}
	return 0
}

// PermissionError says which command the server refused to fenced renewal
// ("CLIENT ID" or "CLIENT KILL"), with the server's reply. It matches
// ErrFencingNotPermitted. Grant the user `+client|id +client|kill` (and
// `+client|info`), use WithUnfencedRenewal, or use the raw-token API, which
// needs neither.
type PermissionError struct {
	Command string // "CLIENT ID" or "CLIENT KILL"
	Err     error  // the server's reply, or why the identity is unknown
}

// Error names the missing permission.
func (e *PermissionError) Error() string {
	return fmt.Sprintf("lease: renewal needs permission to run %s (ACL %s): %v",
		e.Command, aclName(e.Command), e.Err)
}

// Unwrap returns the server's reply.
func (e *PermissionError) Unwrap() error { return e.Err }

// Is makes a PermissionError match ErrFencingNotPermitted.
func (e *PermissionError) Is(target error) bool { return target == ErrFencingNotPermitted }

func aclName(command string) string {
	return strings.ToLower(strings.ReplaceAll(command, " ", "|"))
}
