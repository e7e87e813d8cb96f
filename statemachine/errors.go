package statemachine

import (
	"errors"
	"fmt"
)

// Errors the core puts into Result.Err. Match with errors.Is. They are the lock vocabulary's
// one definition: package lease re-exports them, texts included.
var (
	// ErrKeepAliveActive: a keep-alive is already running on the handle (rule OneKeepAlivePerLock).
	ErrKeepAliveActive = errors.New("lease: a keep-alive is already running on this lock")
	// ErrNotHeld: the operation needs a held lease with time left (rule OneKeepAlivePerLock).
	ErrNotHeld = errors.New("lease: the lock is not held")
	// ErrCallerCancelled: the caller stopped waiting (InputCallerCancelled); the runtime
	// normally replaces it with context.Cause of the caller's ctx.
	ErrCallerCancelled = errors.New("lease: the caller stopped waiting")
)

// Keep-alive context causes (EffectCancelKeepAlive). These sentinels are what the lease
// package exposes; Cause.Err builds the error to pass to the CancelCauseFunc.
var (
	// ErrOwnershipLost: a renewal returned false, was uncertain, or the lease deadline passed.
	ErrOwnershipLost = errors.New("lease: ownership lost")
	// ErrReleased: the lock was released (rule ReleaseEndsTheKeepAlive).
	ErrReleased = errors.New("lease: released")
	// ErrKeepAliveStopped: the keep-alive was stopped by its owner (rule KeepAliveStopKeepsTheLock) or by Close.
	ErrKeepAliveStopped = errors.New("lease: keep-alive stopped")
	// ErrExpired: the lease ran out with no keep-alive renewing it.
	ErrExpired = errors.New("lease: the lease ran out")
	// ErrAcquiredTooLate: the acquisition's reply came after its lease could have expired.
	ErrAcquiredTooLate = errors.New("lease: not acquired: the reply came after the lease could have expired")
)

// Cause says why the keep-alive context was cancelled.
type Cause uint8

// Keep-alive causes, all distinct.
const (
	CauseNone           Cause = iota
	CauseOwnershipLost        // ErrOwnershipLost
	CauseReleased             // ErrReleased
	CauseStopped              // ErrKeepAliveStopped
	CauseRenewalFailure       // *RenewalFailureError wrapping the renewal's error
	CauseExpired              // the lease ran out with no keep-alive renewing it (ErrExpired)
)

// Reason says why ownership was lost (CauseOwnershipLost), for the error the runtime builds.
type Reason uint8

// The reasons of a loss.
const (
	ReasonNone             Reason = iota
	ReasonRefused                 // a renewal or the delete answered that the key is not ours
	ReasonRenewalUnknown          // a renewal's outcome is unknown (Ending.Err says why)
	ReasonReleaseUnknown          // the delete's outcome is unknown (Ending.Err says why)
	ReasonDeadline                // the lease deadline passed with no confirmed renewal
	ReasonDeadlineInFlight        // the lease deadline passed with a command still in flight
	ReasonReadRefused             // an owner-compared read after a push found the key missing or another owner's
	ReasonGuardRefused            // a guarded write's script found the key missing or another owner's
	ReasonFenceRefused            // a guarded write's script found a larger fencing token in the fence record
)

// Ending says why a keep-alive context or the lease ended: Cause, and for a loss its Reason
// and the error that caused it (a renewal's or delete's error, a fence's error).
type Ending struct {
	Cause  Cause
	Reason Reason
	Err    error
}

// Err returns the error to cancel the keep-alive context with. For CauseRenewalFailure it
// wraps failure in a *RenewalFailureError, which also matches ErrOwnershipLost.
func (c Cause) Err(failure error) error {
	switch c {
	case CauseOwnershipLost:
		return ErrOwnershipLost
	case CauseReleased:
		return ErrReleased
	case CauseStopped:
		return ErrKeepAliveStopped
	case CauseRenewalFailure:
		return &RenewalFailureError{Err: failure}
	case CauseExpired:
		return ErrExpired
	}
	return nil
}

// RenewalFailureError is the keep-alive cause when a renewal failed with an error (rule FailedRenewalIsLoss).
// errors.Is(err, ErrOwnershipLost) is true; Unwrap returns the renewal's error.
type RenewalFailureError struct {
	Err error // the renewal's error; never nil when built by Cause.Err with a failure
}

// Error describes the failure without secrets.
func (e *RenewalFailureError) Error() string {
	return fmt.Sprintf("lease: ownership lost: a renewal failed: %v", e.Err)
}

// Unwrap returns the renewal's error.
func (e *RenewalFailureError) Unwrap() error { return e.Err }

// Is makes a renewal failure match ErrOwnershipLost.
func (e *RenewalFailureError) Is(target error) bool { return target == ErrOwnershipLost }
