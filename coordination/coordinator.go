package coordination

import (
	"errors"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// Errors of this package, matched with errors.Is. Everything else an
// acquisition can fail with is lease's: lease.ErrNotAcquired, lease.ErrClosed,
// lease.ErrAcquiredTooLate, lease.ErrInvalidTTL, lease.ErrInvalidOption, the
// transport sentinels (lease.ErrOutcomeUnknown, lease.ErrNotSubmitted,
// lease.ErrServerReply, lease.ErrCrossSlot, ...) and ctx's cause.
var (
	// ErrNilLocks: New was given a nil *lease.Locks.
	ErrNilLocks = errors.New("coordination: nil lease.Locks")
	// ErrSameKeys: the lock key and the fencing counter key are equal.
	ErrSameKeys = errors.New("coordination: lock and fencing counter keys must differ")
	// ErrMalformedFencingToken: the server's reply was neither nil nor a
	// positive int64 token (a protocol error). No lock is handed out; the
	// lease the script may have taken is deleted in the background.
	ErrMalformedFencingToken = conn.ErrMalformedFencingToken
)

// OpError is the error of a Coordinator call that failed: lease's, with
// Op the method ("TryAcquire" or "Acquire"), Key the lock key without the
// Locks' key prefix. It matches every sentinel its reason matches
// (errors.Is) and never includes a token.
type OpError = lease.OpError

// Coordinator hands out fencing-token locks: managed lease handles
// (*lease.Lock) acquired together with the next token of a persistent
// counter. It uses a lease.Locks view — its client, sessions, key prefix,
// logger and options — and holds nothing else: there is nothing to close
// but the Locks (which waits for the background clean-ups of abandoned
// acquisitions and fences), then the rueidis client. It is safe for
// concurrent use. The zero value is not usable: create it with New.
type Coordinator struct {
	locks *lease.Locks
}

// New returns a Coordinator on locks (whose key prefix applies to both keys
// of every lock). It sends nothing. It fails with ErrNilLocks.
func New(locks *lease.Locks) (*Coordinator, error) {
	if locks == nil {
		return nil, ErrNilLocks
	}
	return &Coordinator{locks: locks}, nil
}
