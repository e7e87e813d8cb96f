package lease

import (
	"errors"
	"fmt"
	"strings"

	sm "github.com/respire-go/respire/statemachine"
)

// Errors of the managed handles (TryAcquire, Acquire, Lock, KeepAlive). Match
// them with errors.Is.
var (
	// ErrNotAcquired: Acquire found the lock held by another owner (after the
	// whole wait budget, with WithWait).
	ErrNotAcquired = errors.New("lease: the lock was not acquired because another owner holds it")
	// ErrKeepAliveActive: a keep-alive already runs on this lock (one per lock).
	ErrKeepAliveActive = sm.ErrKeepAliveActive
	// ErrNotHeld: the lock is no longer held (released, lost, or its local
	// estimate ran out), so a keep-alive cannot start.
	ErrNotHeld = sm.ErrNotHeld
	// ErrFencePending: the call's ctx ended while the connection that carried
	// an uncertain command of this lock was still being fenced (CLIENT KILL
	// not answered yet). The lock is no longer held; a command of it may
	// still run until the fence answers, and Locks.Close waits for that.
	ErrFencePending = errors.New("lease: fence of an uncertain command still pending")
	// ErrFencingNotPermitted matches every *PermissionError: managed renewal
	// needs CLIENT ID and CLIENT KILL and the server refused one of them.
	ErrFencingNotPermitted = errors.New("lease: managed renewal needs CLIENT ID and CLIENT KILL permission")
)

// Causes of a keep-alive context's cancellation, read with context.Cause.
// They are distinct: a renewal failure is a *RenewalFailureError, which also
// matches ErrOwnershipLost and unwraps to the renewal's error.
var (
	// ErrOwnershipLost: a renewal returned false (the key expired or has
	// another owner), a renewal's outcome was uncertain, or the lease
	// deadline passed without a confirmed renewal. Stop protected writes.
	ErrOwnershipLost = sm.ErrOwnershipLost
	// ErrReleased: the lock was released by this handle.
	ErrReleased = sm.ErrReleased
	// ErrKeepAliveStopped: the keep-alive was stopped (KeepAlive.Stop,
	// Lock.Close, or the ctx given to Lock.KeepAlive ended); the lock may
	// still be held.
	ErrKeepAliveStopped = sm.ErrKeepAliveStopped
)

// RenewalFailureError is the keep-alive cause when a renewal failed with an
// error (a server error reply, or a command that could not be sent): the
// handle counts the lock as lost. errors.Is(err, ErrOwnershipLost) is true
// and Unwrap returns the renewal's error.
type RenewalFailureError = sm.RenewalFailureError

// PermissionError says which command the server refused to the managed
// renewal path ("CLIENT ID" or "CLIENT KILL"), with the server's reply. It
// matches ErrFencingNotPermitted. Grant the user `+client|id +client|kill`
// (and `+client|info`), or use the raw-token API, which needs neither.
type PermissionError struct {
	Command string // "CLIENT ID" or "CLIENT KILL"
	Err     error  // the server's reply, or why the identity is unknown
}

// Error names the missing permission.
func (e *PermissionError) Error() string {
	return fmt.Sprintf("lease: managed renewal needs permission to run %s (ACL %s): %v",
		e.Command, aclName(e.Command), e.Err)
}

// Unwrap returns the server's reply.
func (e *PermissionError) Unwrap() error { return e.Err }

// Is makes a PermissionError match ErrFencingNotPermitted.
func (e *PermissionError) Is(target error) bool { return target == ErrFencingNotPermitted }

func aclName(command string) string {
	return strings.ToLower(strings.ReplaceAll(command, " ", "|"))
}

// isPermissionDenial reports whether err is a server reply that definitively
// refuses a CLIENT subcommand to this user: NOPERM, or ERR unknown command /
// unknown subcommand / wrong number of arguments (R10).
func isPermissionDenial(err error) bool {
	if err == nil {
		return false
	}
	text := strings.ToLower(err.Error())
	return strings.Contains(text, "noperm") || strings.Contains(text, "unknown command") ||
		strings.Contains(text, "unknown subcommand") || strings.Contains(text, "wrong number of arguments")
}
