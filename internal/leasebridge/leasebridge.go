// Package leasebridge lets package coordination use the parts of package
// lease that are not its public API: the managed acquisition with the
// fencing-token script instead of SET NX PX, the WithReplicas option, and
// lease's classification of transport errors. Package lease registers them
// at init; coordination, which imports lease (so lease's init has run),
// reads them with Get.
//
// The functions are typed with parameters because this package cannot
// import lease (lease imports it): Locks, Lock and Option are *lease.Locks,
// *lease.Lock and lease.AcquireOption.
package leasebridge

import (
	"context"
	"time"
)

// Fenced is what package lease offers package coordination.
type Fenced[Locks, Lock, Option any] struct {
	// Acquire takes key for a managed lock, exactly as Locks.TryAcquire
	// (op "TryAcquire") or Locks.Acquire (op "Acquire", which turns a
	// contended result into ErrNotAcquired) do with opts, except that the
	// acquisition command is the fenced script on key and counterKey (both
	// get the view's key prefix) on key's session, or, with the option
	// Replicas makes, the script followed by WAIT on a dedicated connection.
	// A cross-slot pair is refused before anything is sent. A nil Lock with
	// a nil error is a contended TryAcquire, or, when the Reply says
	// NotReplicated, an acquisition whose WAIT did not confirm the Replicas
	// option: its handle was ended inside lease and is never returned.
	// Errors are *lease.OpError.
	Acquire func(ctx context.Context, locks Locks, op, key, counterKey string, ttl time.Duration,
		opts []Option) (Lock, Reply, error)
	// Replicas returns the acquisition option that asks for WAIT n timeout
	// after the script; validated by Acquire (ErrInvalidOption), refused by
	// acquisitions that are not fenced.
	Replicas func(n int, timeout time.Duration) Option
	// IsTransport reports whether err is classified as target, one of
	// lease's transport sentinels (lease.ErrOutcomeUnknown, ...).
	IsTransport func(err, target error) bool
}

// Reply is what a successful fenced acquisition learned besides the lock.
type Reply struct {
	// FencingToken is the token the script handed out with the lock.
	FencingToken int64
	// Replicas and Timeout are the WAIT that followed the script (0 without
	// the Replicas option; Timeout rounded up to whole milliseconds).
	Replicas int
	Timeout  time.Duration
	// Acknowledged is WAIT's count when WaitErr is nil.
	Acknowledged int64
	// WaitErr is why WAIT gave no count (a conn *Error), or nil.
	WaitErr error
	// NotReplicated: the script took the lease but WAIT did not confirm it
	// (Unconfirmed), so Acquire returned no Lock: the handle was ended
	// there — its keep-alive stopped, then the lease released — and
	// nothing renews the lease any more.
	NotReplicated bool
	// Released, with NotReplicated: that release deleted the lease. When
	// false a lease still on the server expires with its TTL.
	Released bool
}

// Unconfirmed reports whether WAIT was asked for and did not confirm the
// script's write: it failed, or counted fewer than Replicas replicas.
func (r Reply) Unconfirmed() bool {
	return r.Replicas > 0 && (r.WaitErr != nil || r.Acknowledged < int64(r.Replicas))
}

var registered any

// Register records what package lease offers; lease calls it from init.
func Register[Locks, Lock, Option any](f Fenced[Locks, Lock, Option]) { registered = f }

// Get returns what package lease registered. It panics when lease did not
// register these types (or has not been initialised).
func Get[Locks, Lock, Option any]() Fenced[Locks, Lock, Option] {
	return registered.(Fenced[Locks, Lock, Option])
}
