package conn

import (
	"errors"
	"fmt"
	"strings"

	sm "github.com/respire-go/respire/statemachine"
)

// Class tells what an error proves about a command's effect on the server.
// It is the state machine's Outcome (one vocabulary for the wire and the
// core): a classified error is one of its three failure values.
type Class = sm.Outcome

// The error classes.
const (
	// Definite: the server answered with an error reply; the command did not
	// take effect (or, for MOVED/ASK, did not run on that node).
	Definite = sm.OutcomeDefinite
	// NotSubmitted: the command provably never reached the wire (context
	// already done before hand-off, session closing, dial failure). Ownership
	// is unchanged and retrying is safe.
	NotSubmitted = sm.OutcomeNotSubmitted
	// Uncertain: the command may or may not have run (timeout, cancellation
	// or connection loss after hand-off). It is never replayed; managed
	// callers treat ownership as lost and fence the session.
	Uncertain = sm.OutcomeUncertain
)

// opWords names an Error's Op in a user's words, for error texts; an Op
// not listed is printed as it is.
var opWords = map[string]string{
	"acquire":           "acquisition",
	"extend":            "renewal",
	"release":           "release",
	"owner":             "owner read",
	"owner-lease":       "owner's lease read",
	fencedOp:            "fencing-token acquisition",
	"semaphore-acquire": "semaphore acquisition",
	"read-acquire":      "read-lock acquisition",
	"write-acquire":     "write-lock acquisition",
	"fence":             "fence (CLIENT KILL)",
	"probe":             "permission probe",
	"watch":             "key watch",
	"client":            "CLIENT command",
	waitOp:              "WAIT",
	guardOp:             "guarded write",
	guardConfirmOp:      "replication check of a guarded write",
}

// opText is the words of op.
func opText(op string) string {
	if words, ok := opWords[op]; ok {
		return words
	}
	return op
}

// Sentinels matched with errors.Is against any *Error of that class.
var (
	// ErrOutcomeUnknown matches Uncertain errors: the command may have run.
	ErrOutcomeUnknown = errors.New("outcome unknown: the command may have run")
	// ErrNotSubmitted matches NotSubmitted errors: nothing was sent.
	ErrNotSubmitted = errors.New("command not submitted")
	// ErrServerReply matches Definite errors: the server answered with an error.
	ErrServerReply = errors.New("server error reply")
	// ErrDidNotRun matches Definite errors whose reply proves the command did
	// not run and a later attempt may succeed: CLUSTERDOWN, TRYAGAIN,
	// READONLY, MASTERDOWN, LOADING, BUSY, NOREPLICAS, OOM, and a MOVED or
	// ASK that was not followed. Permanent refusals (NOPERM, WRONGTYPE,
	// script errors) do not match.
	ErrDidNotRun = errors.New("the command did not run; a later attempt may succeed")
	// ErrSessionRetired is the cause when a command was offered to a session
	// already retired; it is NotSubmitted.
	ErrSessionRetired = errors.New("session retired")
	// ErrPoolClosed is the cause when the Pool was closed; it is NotSubmitted.
	ErrPoolClosed = errors.New("the Locks is closed")
	// ErrAborted is the cause when the owner of a command's Route stopped it
	// before it was handed to a socket (a managed lock whose lease deadline
	// passed first); it is NotSubmitted.
	ErrAborted = errors.New("command aborted before it was sent")
	// ErrNoIdentity is returned by Fence and ProbeKill for a session whose
	// CLIENT ID could not be learned (CLIENT denied or unknown).
	ErrNoIdentity = errors.New("session has no CLIENT ID identity")
)

// Error is a failed wire operation with its classification. Err is the
// cause: for Definite it is the server's reply (a *rueidis.RedisError from
// the transport, so errors.As to *rueidis.RedisError works, or a
// *ServerError from the pure protocol); otherwise the transport or context
// error.
type Error struct {
	Class    Class
	Op       string    // "acquire", "extend", "release", "owner", "fence", "open", "probe"
	Addr     string    // node address the command was for
	Code     string    // server error code for Definite ("NOPERM", "ERR", "WRONGTYPE", "MOVED")
	Session  Session   // the session that carried the last attempt; nil if none
	Redirect *Redirect // set for MOVED/ASK replies (Definite)
	Err      error
}

// Error describes the failure without any token or key bytes, in a user's
// words, saying once what it proves: "the renewal sent to ADDR got no
// answer, so it may have run: CAUSE", "the acquisition was not sent to
// ADDR: CAUSE" (a connection that could not be made: "could not connect to
// ADDR, nothing sent: CAUSE"), "ADDR refused the release: REPLY".
func (e *Error) Error() string {
	what, to, server := opText(e.Op), "", "the server"
	if e.Addr != "" {
		to, server = " to "+e.Addr, e.Addr
	}
	if errors.Is(e.Err, ErrNotReplicated) {
		return fmt.Sprintf("the %s sent%s was answered but confirms nothing: %v", what, to, e.Err)
	}
	switch e.Class {
	case Uncertain:
		return fmt.Sprintf("the %s sent%s got no answer, so it may have run: %v", what, to, e.Err)
	case NotSubmitted:
		switch {
		case errors.Is(e.Err, ErrPoolClosed):
			return fmt.Sprintf("nothing sent: %v", e.Err)
		case e.Op == "open" || e.Op == "dial":
			return fmt.Sprintf("could not connect%s, nothing sent: %v", to, e.Err)
		}
		return fmt.Sprintf("the %s was not sent%s: %v", what, to, e.Err)
	case Definite:
		var mismatch *LimitMismatchError
		if errors.As(e.Err, &mismatch) {
			return mismatch.Error() // a refusal that says it all
		}
		return fmt.Sprintf("%s refused the %s: %v", server, what, e.Err)
	}
	return fmt.Sprintf("%s%s: %v: %v", e.Op, to, e.Class, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is lets errors.Is match the class sentinels.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrOutcomeUnknown:
		return e.Class == Uncertain
	case ErrNotSubmitted:
		return e.Class == NotSubmitted
	case ErrServerReply:
		return e.Class == Definite
	case ErrDidNotRun:
		return e.Class == Definite && (e.Redirect != nil || IsDidNotRunReply(e.Code+" "))
	}
	return false
}

// ClassOf returns the Class of the first *Error in err's chain, or 0.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return 0
}

// ServerError is a server error reply seen by the pure protocol. Message is
// the whole error line, code included.
type ServerError struct {
	Code    string // first word: "ERR", "NOPERM", "WRONGTYPE", ...
	Message string
}

// Error returns the server's text.
func (e *ServerError) Error() string { return e.Message }

func newServerError(text string) *ServerError {
	code, _, _ := strings.Cut(text, " ")
	return &ServerError{Code: code, Message: text}
}

func unexpected(r Reply) *ServerError {
	return &ServerError{Code: "PROTOCOL", Message: fmt.Sprintf("unexpected reply kind %d", r.Kind)}
}
