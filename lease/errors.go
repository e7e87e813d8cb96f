package lease

import (
	"errors"
	"fmt"
	"strings"

	"github.com/respire-go/respire/conn"
)

// Errors of bad input, returned before anything is sent. Match them with
// errors.Is.
var (
	// ErrNilClient: New was given a nil client.
	ErrNilClient = errors.New("lease: nil client")
	// ErrEmptyKey: the lock key is empty.
	ErrEmptyKey = errors.New("lease: empty lock key")
	// ErrEmptyToken: the owner token is the zero or empty token.
	ErrEmptyToken = errors.New("lease: empty owner token")
	// ErrInvalidTTL: the duration is zero or negative (it must round up to at
	// least 1 ms), longer than MaxTTL, or, for a managed lock, not longer
	// than its drift margin (see WithDriftMargin).
	ErrInvalidTTL = errors.New("lease: invalid lease duration")
	// ErrInvalidToken: text that is not valid UTF-8 where a text token is
	// required (TokenFromString, Token.Text), or not hexadecimal
	// (TokenFromHex).
	ErrInvalidToken = errors.New("lease: invalid token text")
	// ErrInvalidOption: an Option or AcquireOption was given an invalid value.
	ErrInvalidOption = errors.New("lease: invalid option")
	// ErrInvalidName: a semaphore's or read/write lock's name (after the
	// view's prefix) whose keys would not share one hash tag, so that they
	// could hash to different cluster slots: the tag between its "{" and
	// "}" would be empty. (An empty name is ErrEmptyKey.)
	ErrInvalidName = errors.New("lease: invalid semaphore or lock name")
	// ErrInvalidLimit: a semaphore limit below 1 or above 2147483647.
	ErrInvalidLimit = errors.New("lease: invalid semaphore limit")
)

// ErrLimitMismatch matches the error of a semaphore acquisition refused
// because the semaphore's live permits were taken with another limit (the
// limit is stored with them), or have no stored limit at all (added by
// hand or by another version): nothing changed on the server, and waiting
// does not help, so the call returns at once. errors.As to
// *LimitMismatchError gives both limits.
var ErrLimitMismatch = conn.ErrLimitMismatch

// LimitMismatchError is the refusal of ErrLimitMismatch: Stored is the
// limit the live permits use ("" when none is stored), Requested the
// caller's; Unwrap gives the server's reply.
type LimitMismatchError = conn.LimitMismatchError

// Errors of the server or the connection. Every error a call returns
// matches the ones that apply, with errors.Is; each is one value wherever
// respire-go returns it (the wire engine, coordination, election, every
// client adapter), fully described here.
var (
	// ErrOutcomeUnknown: a command was sent (or may have been) and no
	// answer came: it may have run. A managed lock whose renewal or release
	// ends like this is no longer held, and the connection that carried the
	// command is fenced (closed on the server with CLIENT KILL) so that the
	// command cannot run later.
	ErrOutcomeUnknown = conn.ErrOutcomeUnknown
	// ErrNotSubmitted: nothing was sent; the call changed nothing on the
	// server and may be retried.
	ErrNotSubmitted = conn.ErrNotSubmitted
	// ErrServerReply: the server answered with an error reply (NOPERM,
	// WRONGTYPE, ...): the error's text holds the reply, and errors.As to
	// the client's own error type (*rueidis.RedisError, redis.Error,
	// *valkey.ValkeyError) gives it where the client has one.
	ErrServerReply = conn.ErrServerReply
	// ErrDidNotRun: a server error reply that proves the command did not run
	// and a later attempt may succeed (CLUSTERDOWN, TRYAGAIN, READONLY,
	// MASTERDOWN, LOADING, BUSY, NOREPLICAS, OOM, a redirect not followed). It
	// also matches ErrServerReply.
	ErrDidNotRun = conn.ErrDidNotRun
	// ErrCrossSlot: a lease key and its fencing counter key, or a lease key
	// and a key of a guarded write (Lock.Guard), hash to different Cluster
	// slots; use a hash tag (see package coordination). Nothing was sent.
	ErrCrossSlot = conn.ErrCrossSlot
	// ErrClosed: the Locks was closed; nothing was sent.
	ErrClosed = conn.ErrPoolClosed
	// ErrClientClosed: the client was closed while the Locks still used it.
	// A keep-alive ends with this cause; the lock may stay on the server
	// until its lease runs out. Close the Locks before the client.
	ErrClientClosed = conn.ErrClientClosed
)

// OpError is the error of a call that failed: Op is the method ("Release",
// "KeepAlive", ...), Key the lock key without the Locks' key prefix (empty
// where the call has none), Err the reason. It matches every sentinel of
// this package that applies to Err (errors.Is, through Unwrap) and never
// includes a token.
type OpError struct {
	Op  string
	Key string
	Err error
}

// Error reads "lease: Op "key": reason" with one package prefix (the
// reason's own "lease: " or "coordination: " is dropped).
func (e *OpError) Error() string {
	reason := strings.TrimPrefix(strings.TrimPrefix(e.Err.Error(), "lease: "), "coordination: ")
	if e.Key == "" {
		return "lease: " + e.Op + ": " + reason
	}
	return fmt.Sprintf("lease: %s %q: %s", e.Op, e.Key, reason)
}

// Unwrap returns the reason.
func (e *OpError) Unwrap() error { return e.Err }

// opError wraps err for a call of op on key; nil stays nil, and an error
// already wrapped for this call is not wrapped twice.
func opError(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var already *OpError
	if errors.As(err, &already) && already.Op == op {
		return err
	}
	return &OpError{Op: op, Key: key, Err: err}
}
