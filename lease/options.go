package lease

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures New. Options are plain values with no hidden state, so
// one can be reused for several Locks.
type Option func(*options) error

type options struct {
	keyPrefix      string
	logger         *slog.Logger
	commandTimeout time.Duration
}

// WithKeyPrefix prepends prefix to every key sent (SET, GET, DELEX, DELIFEQ
// and the KEYS[1] of the Lua scripts). Default "". In cluster mode the
// prefixed key picks the slot, so a hash tag in the prefix affects placement.
func WithKeyPrefix(prefix string) Option {
	return func(o *options) error { o.keyPrefix = prefix; return nil }
}

// WithLogger sets the logger for diagnostics (never tokens). Default: a
// logger that discards everything. nil means the default.
func WithLogger(logger *slog.Logger) Option {
	return func(o *options) error { o.logger = logger; return nil }
}

// WithCommandTimeout bounds each raw-token call (all its commands, fallback
// steps and redirects included) by d. Default 0: no timeout beyond the
// caller's ctx. A timeout after a command was sent gives an error matching
// conn.ErrOutcomeUnknown. Negative d is rejected with ErrInvalidOption.
func WithCommandTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("%w: negative command timeout %v", ErrInvalidOption, d)
		}
		o.commandTimeout = d
		return nil
	}
}
