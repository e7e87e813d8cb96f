package lease

import (
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	sm "github.com/respire-go/respire/statemachine"
)

// Option configures New. Options are plain values with no hidden state, so
// one can be reused for several Locks.
type Option func(*options) error

type options struct {
	logger         *slog.Logger
	commandTimeout time.Duration
	drift          sm.Drift
	driftSet       bool
	idleCheck      time.Duration
	idleCheckSet   bool
	unfenced       bool
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
	prefixAttr     bool // WithKeyPrefixAttribute
	keysInLogs     bool // WithKeysInLogs
	withoutPush    bool // WithoutPush
}

// WithLogger sets the logger for diagnostics and for one structured event
// per state change that matters to an operator (see "Log events" in the
// package doc). Records never show a token, and show keys only with
// WithKeysInLogs. Default: nothing is logged. nil means the default.
func WithLogger(logger *slog.Logger) Option {
	return func(o *options) error { o.logger = logger; return nil }
}

// WithKeysInLogs adds the lock's key (with the key prefix) to the records
// WithLogger's logger receives, as the attribute "key". Default: keys are
// left out, since they may name customers or resources.
func WithKeysInLogs() Option {
	return func(o *options) error { o.keysInLogs = true; return nil }
}

// WithMeterProvider records the metrics listed under "Metrics" in the
// package doc with a meter of provider (scope
// "github.com/respire-go/respire/lease"); bring your own SDK and exporter.
// Default: no metrics, and the locks pay nothing for them (no allocation,
// no clock read). nil means the default.
func WithMeterProvider(provider metric.MeterProvider) Option {
	return func(o *options) error { o.meterProvider = provider; return nil }
}

// WithTracerProvider records spans around acquisitions (waiting included),
// releases, resets and fences, with the wire commands they sent as span
// events, as children of the span in the call's ctx (see "Spans" in the
// package doc). Default: no spans, and nothing paid for them. nil means the
// default.
func WithTracerProvider(provider trace.TracerProvider) Option {
	return func(o *options) error { o.tracerProvider = provider; return nil }
}

// WithKeyPrefixAttribute adds the key prefix of the view that took a lock
// (Locks.KeyPrefix, "" included) to its metrics and spans, as the
// attribute "respire.lock.key_prefix". Keep prefixes few: each is a time
// series per metric. Keys and tokens are never attributes.
func WithKeyPrefixAttribute() Option {
	return func(o *options) error { o.prefixAttr = true; return nil }
}

// WithCommandTimeout bounds each command by d: every managed lock command
// (acquisition tries, renewals, releases) and each raw-token call (all its
// commands, fallback steps and redirects included), and fences when shorter
// than FenceTimeout, and the one-time permission probe of a session. Default
// 0: no timeout beyond the caller's ctx. A timeout after a command was sent
// gives an error matching ErrOutcomeUnknown; one of the probe before it,
// ErrNotSubmitted (the command was not sent). Negative d, or d longer than
// MaxTTL, is rejected with ErrInvalidOption.
func WithCommandTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 || d > MaxTTL {
			return fmt.Errorf("%w: WithCommandTimeout(%v): the timeout must be from 0 to MaxTTL", ErrInvalidOption, d)
		}
		o.commandTimeout = d
		return nil
	}
}

// WithDriftMargin sets how much earlier than the server a managed lock gives
// its lease up: floor plus fraction of the lease duration. A held lock's
// RemainingEstimate, its State and its keep-alive context all end that much
// before the lease can have expired on the server, which absorbs a client
// clock running slower than the server's, the server's whole-millisecond
// expiry, and the delay between the deadline and the moment protected work
// sees the cancellation (timer, scheduler, a GC pause). Default 1% + 2ms,
// as Redlock's drift factor (DefaultDriftFraction, DefaultDriftFloor). A
// managed lease must be longer than its margin, or the acquisition and
// ResetExpiry refuse it with ErrInvalidTTL. fraction must be in [0, 0.5] and
// floor in [0, MaxTTL], else ErrInvalidOption. Zero for both gives the
// margin up: only for tests that need exact arithmetic. The raw-token API
// has no estimate and is not affected.
func WithDriftMargin(fraction float64, floor time.Duration) Option {
	return func(o *options) error {
		if !(fraction >= 0 && fraction <= 0.5) || floor < 0 || floor > MaxTTL {
			return fmt.Errorf("%w: WithDriftMargin(%v, %v): the fraction must be from 0 to 0.5 and the floor from 0 to MaxTTL",
				ErrInvalidOption, fraction, floor)
		}
		o.drift, o.driftSet = sm.Drift{PPM: int64(fraction * 1e6), Floor: floor}, true
		return nil
	}
}

// The default drift margin (see WithDriftMargin).
const (
	DefaultDriftFraction = 0.01
	DefaultDriftFloor    = 2 * time.Millisecond
)

// WithIdleCheck sets how long a session (the pinned connection of one node)
// may stay without a reply before the next lock command on it is first
// preceded by a PING, which finds a socket the server closed while it was
// idle (a timeout, CLIENT KILL, a failover) before anything of the lock is
// written to it; the command then goes to a fresh session. Default 1s
// (DefaultIdleCheck). Zero pings before every command on a session that is
// not busy; negative, or longer than MaxTTL, is rejected with
// ErrInvalidOption. Busy sessions never ping.
func WithIdleCheck(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 || d > MaxTTL {
			return fmt.Errorf("%w: WithIdleCheck(%v): the interval must be from 0 to MaxTTL", ErrInvalidOption, d)
		}
		o.idleCheck, o.idleCheckSet = d, true
		return nil
	}
}

// DefaultIdleCheck is WithIdleCheck's default.
const DefaultIdleCheck = time.Second

// WithUnfencedRenewal lets keep-alives and ResetExpiry run for a user the
// server does not allow CLIENT ID or CLIENT KILL (least-privilege ACLs),
// instead of refusing them with a *PermissionError. By default a renewal
// whose outcome is unknown (a timeout, a reset connection) is fenced: its
// connection is killed on the server, so the renewal cannot run later, and
// the lock is then recovered by a fresh owner-compared renewal. Without
// that permission nothing can be fenced, and this option gives up:
//
//   - recovery: a renewal with an unknown outcome ends the lock at once
//     (its Context with a *LossError, LossRenewalUnknown), even when the
//     lease would have been confirmed by a fresh renewal;
//   - timeliness of the key's end: that renewal, and a release with an
//     unknown outcome, may still run later on the server, keeping this
//     lock's key (with its token) for up to one more lease, so contenders
//     may wait that much longer.
//
// It never lets two owners hold the lock: a late renewal only extends a
// key that still holds this lock's token, and the lock stopped counting on
// it. Releases go unfenced without this option already (a warning is
// logged once). Acquisition and the raw-token API need no CLIENT
// permission either way.
func WithUnfencedRenewal() Option {
	return func(o *options) error { o.unfenced = true; return nil }
}

// WithoutPush turns push-driven waiting and loss detection off: waiting
// acquisitions (WithWait, WithWaitUntilDone) poll every retry interval, and
// a keep-alive learns that its key was deleted or overwritten by someone
// else only at its next renewal. Default: push on where the server allows
// it — a per-node watcher connection with RESP3 CLIENT TRACKING wakes
// waiters when the key is deleted, expires or changes, and makes a holder
// confirm its ownership with an owner-compared read at once; a server or
// user that refuses CLIENT TRACKING (NOPERM, RESP2, a proxy) is remembered
// per connection and polled, as with this option (see docs/architecture.md,
// "Push-driven waiting and loss detection").
func WithoutPush() Option {
	return func(o *options) error { o.withoutPush = true; return nil }
}
