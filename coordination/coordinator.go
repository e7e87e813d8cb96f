package coordination

import (
	"errors"
	"fmt"
	"strings"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leasebridge"
	"github.com/respire-go/respire/lease"
)

// bridge is package lease's fenced acquisition (see internal/leasebridge).
var bridge = leasebridge.Get[*lease.Locks, *lease.Lock, lease.AcquireOption]()

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

// OpError is the error of a Coordinator call that failed: Op is the method
// ("TryAcquire" or "Acquire"), Key the lock key without the Locks' key
// prefix, Err the reason (a *lease.OpError when lease refused or failed the
// acquisition). It matches every sentinel its reason matches (errors.Is),
// lease's included, and never includes a token.
type OpError struct {
	Op  string
	Key string
	Err error
}

// Error reads `coordination: Op "key": reason`, with one package prefix.
func (e *OpError) Error() string {
	reason := e.Err
	var inner *lease.OpError
	if errors.As(reason, &inner) && inner == reason {
		reason = inner.Err // lease's own "lease: Op "key": " adds nothing here
	}
	text := strings.TrimPrefix(strings.TrimPrefix(reason.Error(), "lease: "), "coordination: ")
	if e.Key == "" {
		return "coordination: " + e.Op + ": " + text
	}
	return fmt.Sprintf("coordination: %s %q: %s", e.Op, e.Key, text)
}

// Unwrap returns the reason.
func (e *OpError) Unwrap() error { return e.Err }

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
