package lease

import "errors"

// Validation errors, returned before anything is sent (match with
// errors.Is). Errors from the server or the connection are *conn.Error
// values: errors.Is(err, conn.ErrOutcomeUnknown) for "the command may have
// run", conn.ErrNotSubmitted for "nothing was sent", and errors.As to
// *rueidis.RedisError for the server's own reply (for example NOPERM).
var (
	// ErrNilClient: New was given a nil rueidis client.
	ErrNilClient = errors.New("lease: nil rueidis client")
	// ErrEmptyKey: the lock key is empty.
	ErrEmptyKey = errors.New("lease: empty lock key")
	// ErrEmptyToken: the owner token is the zero or empty token.
	ErrEmptyToken = errors.New("lease: empty owner token")
	// ErrInvalidTTL: the duration is zero or negative (it must round up to at
	// least 1 ms), longer than MaxTTL, or, for a managed lock, not longer
	// than its drift margin (see WithDriftMargin).
	ErrInvalidTTL = errors.New("lease: invalid lease duration")
	// ErrInvalidToken: text that is not valid UTF-8 where a text token is
	// required (TokenFromString, Token.Text).
	ErrInvalidToken = errors.New("lease: token is not valid UTF-8")
	// ErrInvalidOption: an Option was given an invalid value.
	ErrInvalidOption = errors.New("lease: invalid option")
)
