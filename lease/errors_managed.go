package lease

import (
	"github.com/respire-go/respire/actor"
	sm "github.com/respire-go/respire/statemachine"
)

// Errors of the managed locks (TryAcquire, Acquire, *Lock, *KeepAlive).
// Match them with errors.Is. Each is one value wherever respire-go returns
// it (packages coordination and election return these very values), and
// what it means is said here: no other package's documentation is needed.
var (
	// ErrNotAcquired: Acquire found the lock held by another owner for its
	// whole wait (see WithWait and WithWaitUntilDone).
	ErrNotAcquired = actor.ErrNotAcquired
	// ErrAcquiredTooLate: the acquisition's reply came after its lease could
	// have expired (a stalled server or connection). No lock is handed out:
	// the key is deleted again if it still holds this attempt's token.
	ErrAcquiredTooLate = sm.ErrAcquiredTooLate
	// ErrKeepAliveActive: a keep-alive already runs on this lock (one per lock).
	ErrKeepAliveActive = sm.ErrKeepAliveActive
	// ErrNotHeld: the lock is no longer held (released, lost, or its local
	// estimate ran out), so a keep-alive cannot start.
	ErrNotHeld = sm.ErrNotHeld
	// ErrFencePending: the call's ctx ended while the connection that carried
	// an uncertain command of this lock was still being fenced (CLIENT KILL
	// not answered yet). The lock is no longer held; a command of it may
	// still run until the fence answers, and Locks.Close waits for that.
	ErrFencePending = actor.ErrFencePending
	// ErrFencingNotPermitted matches every *PermissionError: fenced renewal
	// needs CLIENT ID and CLIENT KILL and the server refused one of them.
	ErrFencingNotPermitted = actor.ErrFencingNotPermitted
)

// Why a lock's context (Lock.Context) or a keep-alive's context
// (KeepAlive.Context) ended, read with context.Cause. They are distinct;
// *LossError and *RenewalFailureError also match ErrOwnershipLost. As the
// errors above, each is one value wherever respire-go returns it, fully
// described here.
var (
	// ErrOwnershipLost is matched by every loss: *LossError (with the
	// reason) and *RenewalFailureError. Stop protected work at once.
	ErrOwnershipLost = sm.ErrOwnershipLost
	// ErrReleased: the lock was released by this handle.
	ErrReleased = sm.ErrReleased
	// ErrExpired: the lease's local estimate ran out with no renewal (no
	// keep-alive, or one that was stopped). The key may still exist on the
	// server for up to the drift margin; this handle no longer counts on it.
	ErrExpired = sm.ErrExpired
	// ErrKeepAliveStopped: the keep-alive was stopped (KeepAlive.Stop,
	// Lock.Close, or the ctx given to Lock.KeepAlive ended); the lock may
	// still be held. Only a keep-alive's context ends with it.
	ErrKeepAliveStopped = sm.ErrKeepAliveStopped
)

// LossReason says how ownership was lost (LossError.Reason). It renders as
// its name with fmt, slog and encoding.TextMarshaler.
type LossReason = actor.LossReason

// The reasons of a *LossError.
const (
	// LossRefused: a renewal or the release answered that the key is not
	// ours (it expired, or another owner holds it).
	LossRefused = actor.LossRefused
	// LossRenewalUnknown: a renewal's outcome is unknown (LossError.Err
	// says why); its connection was fenced.
	LossRenewalUnknown = actor.LossRenewalUnknown
	// LossReleaseUnknown: the release's outcome is unknown (LossError.Err
	// says why); its connection was fenced.
	LossReleaseUnknown = actor.LossReleaseUnknown
	// LossDeadline: the lease deadline passed with no confirmed renewal.
	// When renewals were refused with a reply proving they did not run
	// (READONLY, LOADING, CLUSTERDOWN, …) and retried, LossError.Err is the
	// last one's error: why no renewal was confirmed.
	LossDeadline = actor.LossDeadline
	// LossDeadlineInFlight: the lease deadline passed while a renewal or
	// release was still in flight; its connection was fenced. LossError.Err
	// is the last retried renewal's error, as for LossDeadline.
	LossDeadlineInFlight = actor.LossDeadlineInFlight
	// LossReadRefused: the key changed on the server (a push said so) and
	// the owner-compared read that followed found it deleted, expired or
	// holding another owner's token (see WithoutPush).
	LossReadRefused = actor.LossReadRefused
	// LossGuardRefused: a guarded write (Lock.Guard) found the key
	// deleted, expired or holding another owner's token, and wrote nothing.
	LossGuardRefused = actor.LossGuardRefused
	// LossFenceRefused: a guarded write of a fencing-token lock found a
	// larger fencing token in the lock's fence record — a later holder
	// wrote through the lock's counter — and wrote nothing.
	LossFenceRefused = actor.LossFenceRefused
)

// LossError is the cause of a lock's or keep-alive's context when
// ownership was lost: Reason says how, Err the error behind it (the
// renewal's or release's error; for the deadlines the last retried
// renewal's error, if any; nil for LossRefused). It matches
// ErrOwnershipLost and, through Err, the transport sentinels.
type LossError = actor.LossError

// RenewalFailureError is the cause when a renewal failed with an error (a
// server error reply, or a fence of an interrupted renewal that failed): the
// handle counts the lock as lost. It matches ErrOwnershipLost; Unwrap
// returns the renewal's error.
type RenewalFailureError = actor.RenewalFailureError

// PermissionError says which command the server refused to fenced renewal
// ("CLIENT ID" or "CLIENT KILL"), with the server's reply. It matches
// ErrFencingNotPermitted. Grant the user `+client|id +client|kill` (and
// `+client|info`), use WithUnfencedRenewal, or use the raw-token API, which
// needs neither.
type PermissionError = actor.PermissionError
