package actor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// Errors of the managed locks that are the driver's own. Package lease
// re-exports them (and statemachine's and conn's sentinels), with the same
// values, so errors.Is works whichever package the caller names.
var (
	// ErrNotAcquired: Acquire found the lock held by another owner for its
	// whole wait.
	ErrNotAcquired = errors.New("lease: not acquired: another owner holds the lock")
	// ErrFencePending: the connection that carried an uncertain command of
	// this lock is not fenced yet: its CLIENT KILL failed, or did not answer
	// within FenceTimeout (a call waits that long for it after its ctx
	// ended, rule FenceBeforeReturn). The lock is no longer held; a command
	// of it may still run until the fence answers, and Shutdown waits for
	// that.
	ErrFencePending = errors.New("lease: the connection of a command with no answer is still being closed (CLIENT KILL not answered yet)")
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

// lossReasonTexts say how a lock was lost, in a user's words, after
// "ownership lost: ".
var lossReasonTexts = [...]string{
	LossRefused:          "the key expired, or another owner took or deleted it",
	LossRenewalUnknown:   "a renewal got no answer, so it may have run",
	LossReleaseUnknown:   "the release got no answer, so it may have run",
	LossDeadline:         "the lease ended before a renewal was confirmed",
	LossDeadlineInFlight: "the lease ended while a renewal or release had no answer yet",
	LossReadRefused:      "another owner took or deleted the key",
	LossGuardRefused:     "a guarded write found another owner on the key, or none, and wrote nothing",
	LossFenceRefused:     "a guarded write found a larger fencing token that already wrote, and wrote nothing",
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

// Error describes the loss without secrets, each fact once: "lease:
// ownership lost: " and how; for an unanswered command, the command's own
// error (which says it got no answer) when it is the wire's; for a
// deadline, the last retried renewal's error after it.
func (e *LossError) Error() string {
	text := "lease: ownership lost"
	reason := ""
	if int(e.Reason) < len(lossReasonTexts) && e.Reason != 0 {
		reason = lossReasonTexts[e.Reason]
	}
	var wire *conn.Error
	switch {
	case e.Err == nil:
	case (e.Reason == LossRenewalUnknown || e.Reason == LossReleaseUnknown) &&
		errors.As(e.Err, &wire) && wire.Class == conn.Uncertain:
		reason = "" // the wire's error says it: "the renewal sent to … got no answer, so it may have run: …"
	case e.Reason == LossDeadline || e.Reason == LossDeadlineInFlight:
		reason += "; the last renewal"
	}
	if reason != "" {
		text += ": " + reason
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
	var wire *conn.Error
	if errors.As(e.Err, &wire) && wire.Class == conn.Definite {
		return "lease: ownership lost: " + e.Err.Error() // "ADDR refused the renewal: REPLY"
	}
	return "lease: ownership lost: a renewal failed: " + strings.TrimPrefix(fmt.Sprint(e.Err), "lease: ")
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
	return fmt.Sprintf("lease: a keep-alive needs permission to run %s (grant +%s, or use WithUnfencedRenewal): %v",
		e.Command, aclName(e.Command), e.Err)
}

// Unwrap returns the server's reply.
func (e *PermissionError) Unwrap() error { return e.Err }

// Is makes a PermissionError match ErrFencingNotPermitted.
func (e *PermissionError) Is(target error) bool { return target == ErrFencingNotPermitted }

func aclName(command string) string {
	return strings.ToLower(strings.ReplaceAll(command, " ", "|"))
}

// fencePendingError is the error of a caller whose lock's fence did not
// close the connection that carried its uncertain command: either the
// caller's ctx ended and the fence did not answer within FenceTimeout after
// that (cause), or the fence failed (fence). It says what the caller's own
// command met (if it sent one), then that its connection is still being
// closed. It matches ErrFencePending, the ctx's cause and the command's
// error; the fence's own error is kept as text only (its class, a kill not
// sent say, is not the command's, whose outcome stays unknown).
type fencePendingError struct {
	cause   error // why the caller stopped waiting (its ctx's cause); nil when the fence failed
	fence   error // the fence's failure; nil when it did not answer
	command error // the caller's command's error; nil when it sent none
}

// Error reads "lease: " + the command's error (or the ctx's cause), then
// "; its connection is still being closed (CLIENT KILL not answered yet)",
// or, when the fence failed, "(CLIENT KILL failed: ...)"; the ctx's cause
// is told once.
func (e *fencePendingError) Error() string {
	text := fmt.Sprint(e.cause)
	if e.command != nil {
		text = strings.TrimPrefix(e.command.Error(), "lease: ")
		if e.cause != nil && !errors.Is(e.command, e.cause) {
			text += " (stopped waiting: " + fmt.Sprint(e.cause) + ")"
		}
	}
	if e.fence != nil {
		return "lease: " + text + "; its connection is still being closed (CLIENT KILL failed: " + e.fence.Error() + ")"
	}
	return "lease: " + text + "; its connection is still being closed (CLIENT KILL not answered yet)"
}

// Is matches ErrFencePending.
func (e *fencePendingError) Is(target error) bool { return target == ErrFencePending }

// Unwrap returns the ctx's cause (if it ended) and the command's error.
func (e *fencePendingError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.cause, e.command} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
