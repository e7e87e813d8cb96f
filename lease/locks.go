// Package lease provides distributed locks on Redis and Valkey leases: a key
// holding an owner token, with an expiry.
//
// Managed handles: Locks.TryAcquire and Locks.Acquire take a lock under a
// fresh random token (SET NX PX, optionally waiting with WithWait or
// WithWaitUntilDone) and return a *Lock that tracks its lease
// (RemainingEstimate counts from before the send), renews it (ResetExpiry,
// KeepAlive, WithKeepAlive) and releases it (Release, Close). Loss is never
// silent: Lock.Context is cancelled, with the cause, when the lease ends for
// any reason, and before it could have expired on the server; a renewal or
// release whose outcome is unknown gives ownership up and fences its
// connection with CLIENT KILL ID … ADDR …, which needs the CLIENT ID/KILL
// permissions (see PermissionError and WithUnfencedRenewal). Each handle is
// one state machine (docs/states.md) run one input at a time.
//
// Waiting acquisitions and keep-alive holders listen to the server where it
// allows it (RESP3 client-side tracking on one watcher connection per
// node): a waiter tries again as soon as the key is deleted, expires or
// changes, and a holder learns within milliseconds that someone else
// deleted or overwrote its key (LossReadRefused, after an owner-compared
// read). A user or server that refuses tracking falls back to polling
// silently; WithoutPush turns it off.
//
// Locks.Do runs a function under a lock: acquire (waiting as the options
// say), keep-alive, the function under the lease's context, release, with
// an error that says whether the lock was lost while it ran
// (ErrLostDuringWork) or the release's outcome is unknown.
//
// Guarded writes: Lock.Guard runs writes to Redis keys (commands of an
// allowlist, or a GuardScript) on the server only while the lock holds its
// key, in one script that compares the key's value first: a holder whose
// lease ended — paused, its write held up — is refused, nothing written,
// and its lock ends at once (LossGuardRefused). A reply lost on the wire is
// settled (its connection fenced, the write id the script recorded read
// back). See Lock.Guard, and docs/fencing.md for what it protects and what
// it cannot (data outside Redis: pass a fencing token).
//
// Who holds a lock: WithOwner labels a managed lock with its holder (a
// host, a pid, a job id), stored in the key after the token, and
// Locks.Holder reads a key's label and the lease it has left, never its
// token.
//
// Printing or logging any value of this package (fmt, slog) never shows an
// owner token.
//
// Locks also offers the raw-token API (TryTake, ResetExpiry, Release, OwnerToken)
// for tokens that are shared between processes or outlive the acquiring
// process. Extension and release are atomic owner comparisons, chosen per
// physical connection: SET IFEQ / DELEX on Redis 8.4+, SET IFEQ / DELIFEQ on
// Valkey 9.0+, SET IFEQ / Lua on Valkey 8.1, Lua on older servers (see
// docs/compatibility.md). The raw-token API never fences connections and
// never needs CLIENT permissions.
//
// # Metrics
//
// WithMeterProvider records these (OpenTelemetry, scope
// "github.com/respire-go/respire/lease" at version Version; bring your own
// SDK). Attribute values are fixed words, never a key or a token; every
// result, cause and reason is the one attribute respire.result;
// WithKeyPrefixAttribute adds respire.lock.key_prefix (the view's prefix)
// to the lock metrics.
//
//   - respire.lock.acquisitions (counter), respire.result: acquired,
//     contended (another owner held it for the whole wait), abandoned (the
//     caller's ctx ended first, or the reply came too late), failed.
//   - respire.lock.acquire.duration (histogram, s), respire.result: the
//     whole call, polling (or waiting in a fair queue) included: the
//     acquisition-wait histogram.
//   - respire.lock.held (up-down counter): +1 when acquired (once per
//     lock, an uncertain SET confirmed by settling included), -1 when the
//     handle sees its lease end (release, loss, expiry noticed by a
//     keep-alive, Lock.Context's watch or the next call on the lock).
//   - respire.lock.waiters (up-down counter), respire.wait: fair
//     (WithFairWait) or unfair: acquisitions of this process waiting
//     (WithWait, WithWaitUntilDone), +1 when one starts, -1 when it returns.
//   - respire.lock.hold.duration (histogram, s), respire.result: released
//     or lost: from acquired to the handle seeing its lease end.
//   - respire.lock.renewals (counter), respire.result: renewed, recovered,
//     refused (not ours any more), error (a server error reply, or a reset
//     not sent), unknown (outcome unknown), not-sent (a keep-alive renewal
//     that did not run, retried).
//   - respire.lock.renewal.lateness (histogram, s): how long after its due
//     time a keep-alive renewal was handed to the connection.
//   - respire.lock.releases (counter), respire.result: per delete sent
//     by Release or Close: released, not-owned, refused (server error
//     reply, still held), unknown, not-sent.
//   - respire.lock.losses (counter), respire.result: a LossReason's name
//     (refused, renewal-outcome-unknown, release-outcome-unknown, deadline,
//     deadline-in-flight, read-refused, guard-refused, fence-refused),
//     renewal-failed or expired.
//   - respire.fences (counter), respire.result: ok or failed, per fence of
//     a lock command whose outcome was unknown.
//   - respire.fallbacks (counter), respire.capability (set-ifeq, delex,
//     delifeq, script-cache), server.address, server.port: each step from
//     a native command the server lacks (or an uncached script) to the
//     next implementation.
//   - respire.sessions.opened (counter), server.address, server.port.
//   - respire.sessions.retired (counter), respire.result (dead,
//     transport-error, fenced, redirect, readonly, demoted, superseded,
//     closed), server.address, server.port.
//
// # Spans
//
// WithTracerProvider records respire.acquire (waiting included),
// respire.release and respire.reset as children of the span in the call's
// ctx, and, as roots linked to the lock's respire.acquire span (nothing
// waits for them): respire.fence, the kill of a connection whose command's
// outcome was unknown; respire.renew, each keep-alive renewal from its send
// to its answer; respire.loss, the moment the handle saw its lease end
// other than by a release, with the cause. Each wire command a call sends
// is an event of its span, named after the command (SET, EVALSHA, DELEX,
// CLIENT KILL — a fence's kill —, …); the permission probe, sent once per
// session before its first command that may need a fence (CLIENT KILL ID
// <own id> SKIPME yes, which kills nothing), is the event "CLIENT KILL
// SKIPME (permission probe)". Attributes: respire.result (the words of the
// metrics: a renewal's result, a release's, a loss's cause),
// respire.event (the state graph's edge, on respire.renew and
// respire.loss), error.type (a word: outcome-unknown, not-sent,
// server-reply, permission, closed, cancelled, …) on failure, and
// respire.lock.key_prefix with WithKeyPrefixAttribute.
//
// # Log events
//
// WithLogger receives one record per state change that matters to an
// operator: "lease: acquired" (debug: ttl, keep_alive, waited; durations
// as text, "30s", never nanoseconds), "lease:
// fallback learned" (info, once per session and capability: capability,
// server), "lease: lock lost" (warn: cause, event, error), "lease: release
// refused" and "lease: release outcome unknown" (warn: outcome, error),
// "lease: lock command fenced" (warn: result, error) and "lease: session
// retired" (debug: reason, server). Warnings are rate-limited: at most one
// per message and cause per second per Locks, the next one carrying
// "suppressed", the count held back. No record shows a token; "key" only
// with WithKeysInLogs.
//
// Without these options none of it runs: an acquisition and a release pay
// nothing for it.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leaseinternal/hook"
	sm "github.com/respire-go/respire/statemachine"
)

// Locks is the entry point for locks on one client, with an optional key
// prefix. It is safe for concurrent use. Views made with WithKeyPrefix
// share the parent's sessions; Close closes them for every view. The zero
// value is not usable: create Locks with New (or an adapter's New).
type Locks struct {
	core   *core
	prefix string // full prefix of this view
}

// core is what every view of one New shares: the driver that runs the
// managed locks, and what the raw-token API and telemetry need.
type core struct {
	transport      conn.Transport
	driver         *actor.Driver
	logger         *slog.Logger
	commandTimeout time.Duration
	obs            *observer // telemetry (observe.go); nil when none was asked for
}

// New returns Locks on client, a Redis client as respire-go's wire engine
// uses it (conn.Client): take it from the adapter module of your client —
// rueidislease.New, goredis.New and valkeygo.New call New for you. It sends
// nothing: connections open on first use (per node a session shared by the
// locks, a fence connection, and with push a tracking watcher). It fails
// with ErrNilClient for a nil client and ErrInvalidOption for a bad option.
// Locks never closes client; call Locks.Close before closing it.
func New(client conn.Client, opts ...Option) (*Locks, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	return newTransport(conn.NewEngine(conn.EngineConfig{Client: client}), opts...)
}

// newTransport returns Locks on any transport: what New does over a
// client's engine (internal/leaseinternal.NewTransport for the simulator
// and the tests). Locks takes ownership of t: Locks.Close closes it. It
// fails with ErrNilClient for a nil t and ErrInvalidOption for a bad
// option, before anything is sent.
func newTransport(t conn.Transport, opts ...Option) (*Locks, error) {
	if t == nil {
		return nil, ErrNilClient
	}
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	obs, err := newObserver(&o)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if !o.driftSet {
		o.drift = sm.DefaultDrift()
	}
	if c, ok := t.(interface {
		SetIdleCheck(time.Duration) time.Duration
	}); ok && o.idleCheckSet {
		c.SetIdleCheck(o.idleCheck)
	}
	cfg := actor.Config{Transport: t, NewToken: newTokenText, Drift: o.drift, CommandTimeout: o.commandTimeout,
		UnfencedRenewal: o.unfenced, Push: !o.withoutPush, Logger: o.logger, KeysInLogs: o.keysInLogs}
	if obs != nil {
		if c, ok := t.(interface{ SetObserver(*conn.Observer) }); ok {
			c.SetObserver(obs.connObserver())
		}
		cfg.Observer = obs
	}
	c := &core{transport: t, driver: actor.New(cfg), logger: o.logger, commandTimeout: o.commandTimeout, obs: obs}
	return &Locks{core: c}, nil
}

// newTokenText is the driver's source of owner tokens: 128 random bits
// from crypto/rand, as hexadecimal text (see NewToken).
func newTokenText() string {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic("lease: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(raw[:])
}

// driver returns the driver that runs this Locks' managed locks (for
// packages that build on lease: internal/leaseinternal.Driver).
func (l *Locks) driver() *actor.Driver { return l.core.driver }

// The parts of Locks respire-go's own packages build on, reached through
// internal/leaseinternal: not lease's API.
func init() {
	hook.Driver = (*Locks).driver
	hook.AcquireFenced = (*Locks).acquireFenced
	hook.NewTransport = newTransport
}

// WithKeyPrefix returns a view whose keys get prefix appended to this view's
// prefix ("a:" then "b:" gives "a:b:key"): every key sent (SET, GET, DELEX,
// DELIFEQ, the keys of the scripts) carries it. In cluster mode the
// prefixed key picks the slot, so a hash tag in the prefix affects
// placement. It sends nothing and shares this Locks' sessions, logger and
// timeout; closing any view closes them all.
func (l *Locks) WithKeyPrefix(prefix string) *Locks {
	return &Locks{core: l.core, prefix: l.prefix + prefix}
}

// KeyPrefix returns this view's full key prefix.
func (l *Locks) KeyPrefix() string { return l.prefix }

// Close closes this Locks and all its views; calls made afterwards fail
// with an error matching ErrClosed (and ErrNotSubmitted). It settles what
// this Locks has running, so that once it returns nothing it sent can
// still run on the server, in three steps:
//
//  1. It refuses new lock commands, and closes the dedicated connection of
//     every WithReplicas acquisition (package coordination) still waiting
//     for its WAIT: that acquisition fails at once, its outcome unknown,
//     and the lease its script may have taken is cleaned up (step 3).
//     Then it waits, for at most CloseGrace, for the background work
//     already running: clean-up deletes of abandoned acquisitions (each
//     bounded by 5s) and fences (each bounded by FenceTimeout).
//  2. It retires the sessions, closing their sockets (rueidis drains a
//     socket for at most about 1s), which ends the commands still in
//     flight on them — renewals, releases, acquisitions — as uncertain
//     (a socket closed locally may still have delivered them).
//  3. It waits for those commands and for the fences and clean-ups they
//     start (each bounded as in step 1), then closes the transport.
//
// So Close returns within about CloseGrace + 1s + FenceTimeout (about 11s)
// of its call even on a stalled server, and at once when nothing runs. Two
// waits are bounded only by the caller: an acquisition blocked in rueidis'
// Dedicate (its dedicated pool exhausted, ClientOption.BlockingPoolSize)
// and a command started concurrently with Close on a session opened after
// step 2, which end with their own ctx (or WithCommandTimeout). Close does
// not close the rueidis client — close the client after Locks — and does
// not release the locks still held: they expire (a running keep-alive ends
// at its next renewal, which is not sent). It is idempotent and safe for
// concurrent use: a second call waits for the first one's shutdown.
func (l *Locks) Close() {
	<-l.core.driver.Shutdown()
}

// CloseGrace bounds how long Locks.Close waits for the background work
// (clean-ups, fences) begun before it, while the sessions they may use are
// still open; after it the sessions are closed under that work, which
// then goes on (fencing what it must) within its own bound.
const CloseGrace = actor.CloseGrace

// CloseContext is Close that stops waiting when ctx ends: it returns nil
// once the shutdown has finished, or, when ctx ends first, an error
// matching ctx's cause (errors.Is(err, context.DeadlineExceeded) for a
// deadline) at once. The shutdown itself is not cut short — cutting it
// short could leave an unfenced command free to run later —: it goes on in
// the background and ends within Close's bound of its start (see Close),
// sending nothing but what it needs to settle the commands that were in
// flight (their fences, the clean-ups of abandoned acquisitions). Every
// call made after it began fails with ErrClosed. A later Close or
// CloseContext waits for the same shutdown; until one returns nil, work of
// this Locks may still run.
func (l *Locks) CloseContext(ctx context.Context) error {
	d := l.core.driver
	if ctx.Done() == nil {
		l.Close()
		return nil
	}
	if !d.Closed() {
		go func() { <-d.Shutdown() }()
	}
	done := d.ShutdownDone()
	select {
	case <-done:
		return nil // also with ctx ended: the shutdown is over
	default:
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return opError("CloseContext", "", fmt.Errorf("%w (the shutdown goes on in the background; Close waits for it)",
			context.Cause(ctx)))
	}
}

// key returns the wire key for a user key.
func (l *Locks) key(k string) string { return l.prefix + k }

// withTimeout applies WithCommandTimeout to one call.
func (l *Locks) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.core.commandTimeout > 0 {
		return context.WithTimeout(ctx, l.core.commandTimeout)
	}
	return ctx, func() {}
}
