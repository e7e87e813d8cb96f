package actor

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/track"
	sm "github.com/respire-go/respire/statemachine"
)

// FenceTimeout bounds the fence of a connection whose command's outcome is
// unknown (CLIENT KILL sent from another connection), unless
// Config.CommandTimeout sets a shorter bound. A fence that gets no answer in
// time counts as failed: the lock is lost.
const FenceTimeout = 5 * time.Second

// CloseGrace bounds how long Driver.Shutdown waits for the background work
// (clean-ups, fences) begun before it, while the sessions it may use are
// still open; after it the sessions are closed under that work, which then
// goes on (fencing what it must) within its own bound.
const CloseGrace = 5 * time.Second

// Config is what a Driver is made of. A zero field means its default; the
// Transport is required.
type Config struct {
	Transport conn.Transport // the wire (conn.Pool over rueidis, goredis, the simulator)
	Clock     Clock          // default RealClock()
	Spawn     Spawn          // default RealSpawn()
	// Jitter returns a random number in [0, 1) for polling sleeps (see
	// statemachine.Poll); default math/rand/v2's Float64.
	Jitter func() float64
	// NewToken returns a fresh owner token for each try; required (the
	// lease package draws 128 bits from crypto/rand).
	NewToken func() string
	// Drift is the margin managed leases are given up by (required: the
	// zero value gives nothing up, for tests of exact arithmetic only).
	Drift sm.Drift
	// CommandTimeout bounds each lock command (0: the caller's ctx only).
	CommandTimeout  time.Duration
	UnfencedRenewal bool         // renew on sessions that cannot be fenced (lease.WithUnfencedRenewal)
	Push            bool         // push-driven waiting and loss detection (client-side tracking)
	Logger          *slog.Logger // default: discards
	KeysInLogs      bool         // log records may name the key
	Observer        Observer     // telemetry; nil: none, and nothing runs for it
}

// Driver runs the lock handles of one lease.Locks (and its views): every
// input to a handle — a request, a timer tick, a command's completion, a
// fence's answer, a push — is stepped through its statemachine.Handle one
// at a time, under the handle's mutex, and the effects the step returns
// are carried out here: commands sent through the Transport, timers armed
// on one heap, renewals batched per node, fences, clean-ups, the push
// hub's reads. A held lock costs no goroutine: goroutines exist only while
// there is work (a command on the wire, a batch of renewals, a fence).
// Everything that may block goes through Config's Clock, Spawn and
// Transport, which is how sim/dst runs this very code deterministically.
// It is safe for concurrent use.
type Driver struct {
	transport       conn.Transport
	clock           Clock
	spawn           Spawn
	jitter          func() float64
	newToken        func() string
	drift           sm.Drift
	commandTimeout  time.Duration
	unfencedRenewal bool
	keysInLogs      bool
	logger          *slog.Logger
	obs             Observer
	cluster         bool
	switches        bool // the primary can move (Sentinel): see watchForSwitch

	standalone sessionCache // the current session, standalone mode only
	fencing    sync.Map     // conn.Session → fenceVerdict

	mu       sync.Mutex
	renewers map[string]uint16 // per node address: 1 + its index in renewerList
	// renewerList is every node's renewer, appended to (a fresh copy each
	// time) and never shrunk, so a Lock names its renewer by index
	// (renewerOf) without d.mu.
	renewerList atomic.Pointer[[]*renewer]
	// waiterRenewers renew fair waiters' leases, per node address.
	waiterRenewers map[string]*renewer

	timers timerHeap // every lock's renewal and deadline timers (timers.go)
	tries  tryPool   // Locks for acquisition tries, reused after a refusal (acquire.go)

	unfencedWarning        sync.Once
	unfencedRenewalWarning sync.Once
	push                   *pushHub      // push-driven waiting and loss detection; nil without Config.Push
	background             track.Tracker // fences and clean-ups; Shutdown waits for them
	inflight               track.Tracker // lock commands sent and the steps of their completions
	handOverOff            atomic.Bool   // a hand-over was answered with an error: releases go alone (push_handover.go)

	closing   atomic.Bool // Shutdown began: read on every managed command
	closeOnce sync.Once
	closeDone chan struct{} // closed when the shutdown has finished
	stop      context.Context
	stopWork  context.CancelFunc // ends stop when Shutdown begins (WithReplicas' WAIT)
}

// New returns a Driver on cfg.Transport. It sends nothing.
func New(cfg Config) *Driver {
	d := &Driver{transport: cfg.Transport, clock: cfg.Clock, spawn: cfg.Spawn, jitter: cfg.Jitter,
		newToken: cfg.NewToken, drift: cfg.Drift, commandTimeout: cfg.CommandTimeout,
		unfencedRenewal: cfg.UnfencedRenewal, keysInLogs: cfg.KeysInLogs, logger: cfg.Logger, obs: cfg.Observer,
		cluster: cfg.Transport.Cluster(), renewers: map[string]uint16{}, closeDone: make(chan struct{})}
	d.renewerList.Store(new([]*renewer))
	if d.clock == nil {
		d.clock = RealClock()
	}
	if d.spawn == nil {
		d.spawn = RealSpawn()
	}
	if d.jitter == nil {
		d.jitter = rand.Float64
	}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	d.stop, d.stopWork = context.WithCancel(context.Background())
	if cfg.Push {
		d.push = newPushHub(d)
	}
	if !d.cluster {
		cfg.Transport.SetPrimarySwitchHandler(d.primarySwitched)
	}
	if s, ok := cfg.Transport.(interface{ Switches() bool }); ok {
		d.switches = s.Switches()
	}
	return d
}

// Transport returns the transport the driver sends on.
func (d *Driver) Transport() conn.Transport { return d.transport }

// Clock returns the driver's clock.
func (d *Driver) Clock() Clock { return d.clock }

// Logger returns the driver's logger (never nil).
func (d *Driver) Logger() *slog.Logger { return d.logger }

// Drift returns the drift margin of the driver's leases.
func (d *Driver) Drift() sm.Drift { return d.drift }

// Closed reports whether Shutdown began.
func (d *Driver) Closed() bool { return d.closing.Load() }

// Shutdown settles what the driver has running, so that once it has
// finished nothing it sent can still run on the server, and closes the
// transport. It refuses new lock commands and ends stop (the WAIT of a
// WithReplicas acquisition), waits at most CloseGrace for the background
// work already running (clean-ups, fences), retires the sessions (their
// commands in flight end as uncertain), waits for those commands and the
// fences and clean-ups they start, then closes the transport. It returns
// the channel closed when all of that has finished; only the first call
// does the work, on its goroutine, and every call returns the same
// channel.
func (d *Driver) Shutdown() <-chan struct{} {
	first := false
	d.closeOnce.Do(func() { first = true })
	if !first {
		return d.closeDone
	}
	d.closing.Store(true)
	d.stopWork()
	if d.push != nil {
		d.push.close()
	}
	grace := make(chan struct{})
	t := time.AfterFunc(CloseGrace, func() { close(grace) }) // wall-clock, as Close's bound
	d.background.WaitUntil(grace)
	t.Stop()
	d.transport.RetireAll()
	d.inflight.Wait()
	d.background.Wait()
	d.transport.Close()
	close(d.closeDone)
	return d.closeDone
}

// ShutdownDone returns the channel closed once Shutdown has finished.
func (d *Driver) ShutdownDone() <-chan struct{} { return d.closeDone }

// closedErr returns the error of a managed command started after Shutdown
// began: NotSubmitted, matching conn.ErrPoolClosed (a keep-alive ends with
// it at once). Background clean-ups and fences still run until Shutdown
// has finished.
func (d *Driver) closedErr() error {
	if d.closing.Load() {
		return &conn.Error{Class: conn.NotSubmitted, Op: "open", Err: conn.ErrPoolClosed}
	}
	return nil
}

// KeyArgs returns the arguments of a log record, with "key" (wireKey)
// first when the driver may log keys.
func (d *Driver) KeyArgs(wireKey string, args ...any) []any {
	if d.keysInLogs {
		return append([]any{"key", wireKey}, args...)
	}
	return args
}

// sessionFor returns the session for wireKey: in standalone mode the cached
// current session while it is not retired, otherwise the transport's
// routing.
func (d *Driver) sessionFor(ctx context.Context, wireKey string) (conn.Session, error) {
	if err := d.closedErr(); err != nil {
		return nil, err
	}
	if !d.cluster {
		if s := d.standalone.Load(); s != nil && !s.Retired() && d.transport.IsPrimary(s.Node()) {
			return s, nil
		}
	}
	s, err := d.transport.SessionForKey(ctx, wireKey)
	if err == nil && !d.cluster {
		d.standalone.Store(s)
	}
	return s, err
}

// StandaloneSession returns the cached session of standalone mode (nil
// before the first command or in cluster mode).
func (d *Driver) StandaloneSession() conn.Session { return d.standalone.Load() }

// commandContext applies Config.CommandTimeout to one managed command. On
// the real clock it is a deadline (conn turns it into a cancellation where
// rueidis needs one); on any other clock (a simulation's virtual time) it
// is a timer of that clock whose cause is context.DeadlineExceeded, so
// that the timeout falls on the clock's time: context.WithTimeout would arm
// a wall-clock timer behind the driver's seams.
func (d *Driver) commandContext(ctx context.Context) (context.Context, context.CancelFunc) {
	switch {
	case d.commandTimeout <= 0:
		return ctx, func() {}
	case d.clock == realTime:
		return context.WithTimeout(ctx, d.commandTimeout)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	timer := d.clock.AfterFunc(d.commandTimeout, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() {
		timer.Stop()
		cancel(nil)
	}
}

// bound returns a context that parent's end or d's clock after dur ends:
// on the real clock a deadline (every command the library sends on its own
// carries one, so that a client that bounds its I/O only by deadlines —
// go-redis — ends it), on another clock (a simulation's virtual time) a
// timer of that clock (conn.Bound). Fences, clean-ups and reads travel on
// connections of the library's own, so a deadline expiring there closes
// nothing of the application's.
func (d *Driver) bound(parent context.Context, dur time.Duration) (context.Context, context.CancelFunc) {
	return conn.Bound(d.clock, parent, dur)
}

// fenceBound bounds one fence (or the read that follows it) by
// FenceTimeout, or by CommandTimeout when that is shorter, under parent.
func (d *Driver) fenceBound(parent context.Context) (context.Context, context.CancelFunc) {
	dur := FenceTimeout
	if t := d.commandTimeout; t > 0 && t < dur {
		dur = t
	}
	return d.bound(parent, dur)
}

// goBackground runs f through the driver's Spawn, as work Shutdown waits
// for.
func (d *Driver) goBackground(f func()) {
	d.background.Add()
	d.spawn.Go(func() {
		defer d.background.Done()
		f()
	})
}

// goCommand runs f (a lock command and the step of its completion) through
// the driver's Spawn, as work Shutdown waits for.
func (d *Driver) goCommand(f func()) {
	d.inflight.Add()
	d.spawn.Go(func() {
		defer d.inflight.Done()
		f()
	})
}

// sessionCache holds one session, read without a lock.
type sessionCache struct{ p atomic.Pointer[sessionBox] }

type sessionBox struct{ s conn.Session }

// Load returns the session, nil when none was stored.
func (c *sessionCache) Load() conn.Session {
	if b := c.p.Load(); b != nil {
		return b.s
	}
	return nil
}

// Store keeps s (allocating only when it changes).
func (c *sessionCache) Store(s conn.Session) {
	if b := c.p.Load(); b == nil || b.s != s {
		c.p.Store(&sessionBox{s: s})
	}
}

// errWaitOver is the cause that ends the settling of an uncertain SET when
// the wait's budget is spent.
var errWaitOver = errors.New("the wait's budget is spent")

// Observer returns the driver's observer (nil when none).
func (d *Driver) Observer() Observer { return d.obs }

// GoBackground runs f through the driver's Spawn, as background work
// Shutdown waits for (telemetry writes a log record there when it is told
// of a step under a lock's mutex).
func (d *Driver) GoBackground(f func()) { d.goBackground(f) }
