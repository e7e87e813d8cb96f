package conn

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/internal/track"
)

// Engine is the wire: conn.Transport over any Redis client's Client. It
// keeps one current session per node (one pinned connection shared by
// many locks), one fence connection per node (dialled with the session,
// never carrying a lock command, so that a stall of the session's socket
// cannot hold up its fence), one tracking watcher per node for push, and
// the cluster's slot map; it follows MOVED and ASK, retires sessions on
// READONLY and on a Sentinel switch, checks idle sockets with a PING, and
// classifies every failure with the one rule (see Class). Create it with
// NewEngine; it is safe for concurrent use. Close it when done: it closes
// every connection it dialled and never the client.
type Engine struct {
	client Client
	name   string
	mode   Mode
	clock  Clock
	spawn  Spawn
	obs    *Observer // telemetry (SetObserver); nil: none

	idleCheck atomic.Int64                      // see SetIdleCheck
	closedBy  atomic.Pointer[ClientClosedError] // the client was found closed: nothing more is sent

	stop     context.Context // ended by Close: opens and background work give up
	stopWork context.CancelFunc

	mu       sync.Mutex
	seq      uint64                // the last session's seq
	sessions map[string]*session   // current session per node
	open     map[*session]struct{} // every session not yet retired
	fences   map[string]*link      // the fence connection per node
	opening  map[string]*openCall  // one open per key at a time
	closed   bool

	slots *slotTable   // cluster mode only
	push  pushState    // tracking watchers, one per node (engine_watch.go)
	prim  primaryState // Sentinel mode: the primary last named, its polls (engine_switch.go)
	repl  replicaState // Sentinel mode: the replicas each primary has had (engine_replicas.go)

	running track.Tracker // drainers, background closes and opens: Close waits
}

// EngineConfig configures an Engine. Only Client is required.
type EngineConfig struct {
	// Client is the Redis client the engine dials through; it stays the
	// caller's (the engine never closes it).
	Client Client
	// Clock and Spawn are the engine's time and tasks; nil means
	// RealClock and RealSpawn (sim/dst passes virtual ones).
	Clock Clock
	Spawn Spawn
}

// NewEngine returns the engine over cfg.Client. It sends nothing:
// connections open on first use.
func NewEngine(cfg EngineConfig) *Engine {
	e := &Engine{client: cfg.Client, name: cfg.Client.Name(), mode: cfg.Client.Mode(), clock: cfg.Clock, spawn: cfg.Spawn,
		sessions: map[string]*session{}, open: map[*session]struct{}{}, fences: map[string]*link{},
		opening: map[string]*openCall{}}
	if e.clock == nil {
		e.clock = RealClock()
	}
	if e.spawn == nil {
		e.spawn = RealSpawn()
	}
	if e.mode == ModeCluster {
		e.slots = &slotTable{}
	}
	e.stop, e.stopWork = context.WithCancel(context.Background())
	e.idleCheck.Store(int64(DefaultIdleCheck))
	return e
}

// Cluster implements Transport.
func (e *Engine) Cluster() bool { return e.mode == ModeCluster }

// Switches reports whether the primary of the engine's keys can move under
// it (Sentinel mode): the switch handler may be told (see
// SetPrimarySwitchHandler).
func (e *Engine) Switches() bool { return e.mode == ModeSentinel }

// SetIdleCheck sets how long a session may stay without a reply before the
// next command on it is preceded by a liveness PING, and returns the
// previous value; zero or less pings before every command. It takes effect
// for the next command. The default is DefaultIdleCheck.
func (e *Engine) SetIdleCheck(d time.Duration) time.Duration {
	return time.Duration(e.idleCheck.Swap(int64(d)))
}

// SetObserver sets the engine's observer; nil removes it. Call it before
// the engine's first use: it is not synchronised with commands in flight.
func (e *Engine) SetObserver(o *Observer) { e.obs = o }

// ClientAlive implements Transport: an error matching ErrClientClosed
// (NotSubmitted, its cause a *ClientClosedError naming the client) once the
// client was closed. It sends no lock command (see Client.Closed).
func (e *Engine) ClientAlive() error {
	if err := e.clientClosed(); err != nil {
		return &Error{Class: NotSubmitted, Op: "client", Err: err}
	}
	return nil
}

// clientClosed returns the *ClientClosedError once the client was found
// closed (remembered: nothing more is asked or sent), nil before.
func (e *Engine) clientClosed() error {
	if c := e.closedBy.Load(); c != nil {
		return c
	}
	if err := e.client.Closed(); err != nil {
		c := &ClientClosedError{Client: e.name, Err: err}
		e.closedBy.CompareAndSwap(nil, c)
		return e.closedBy.Load()
	}
	return nil
}

// IsPrimary implements Transport: outside Sentinel mode always true; with
// Sentinel, whether node is the primary the client knows now. It sends no
// command.
func (e *Engine) IsPrimary(node string) bool {
	if e.mode != ModeSentinel {
		return true
	}
	primary, err := e.primary(context.Background())
	return err == nil && primary == node
}

// own returns ctx bounded by d when it has no deadline of its own: every
// command the engine sends on its own carries one.
func (e *Engine) own(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok && e.clock == Clock(realTime) {
		return ctx, func() {}
	}
	return Bound(e.clock, ctx, d)
}

// detached returns a ctx that keeps ctx's values but not its end: Close
// ends it, and d after now.
func (e *Engine) detached(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := e.spawn.AfterFunc(e.stop, cancel)
	bounded, cancelBound := Bound(e.clock, inner, d)
	return bounded, func() {
		cancelBound()
		stop()
		cancel()
	}
}

// background runs f on a task of the engine that Close waits for.
func (e *Engine) background(f func()) {
	e.running.Add()
	e.spawn.Go(func() {
		defer e.running.Done()
		f()
	})
}

// RetireAll implements Transport: every session open now is retired
// (commands in flight on them become uncertain, queued ones not
// submitted); later calls open fresh ones. It blocks until their
// connections are closed.
func (e *Engine) RetireAll() {
	e.mu.Lock()
	open := sortedSessions(e.open)
	e.open = map[*session]struct{}{}
	e.sessions = map[string]*session{}
	e.mu.Unlock()
	for _, s := range open {
		e.retireSession(s, RetiredClosed)
	}
	for _, s := range open {
		s.link.waitClosed() // the fence and watcher connections stay, and their drainers run on
	}
}

// sortedSessions returns the sessions of set in the order they opened
// (a simulation's schedule must not depend on a map's order).
func sortedSessions(set map[*session]struct{}) []*session {
	out := make([]*session, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *session) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// sortedLinks returns the links of m in the order of their nodes.
func sortedLinks(m map[string]*link) []*link {
	out := make([]*link, 0, len(m))
	for _, node := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[node])
	}
	return out
}

// Close implements Transport: every connection of the engine is closed for
// good and later calls fail with ErrPoolClosed (NotSubmitted). It blocks
// until every task and connection of the engine ended (a connection closes
// within about a second, whatever the server does). Idempotent; the client
// is not closed (a ClientReleaser is released).
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	open, fences := sortedSessions(e.open), sortedLinks(e.fences)
	e.open, e.sessions, e.fences = map[*session]struct{}{}, map[string]*session{}, map[string]*link{}
	e.mu.Unlock()
	e.stopWork()
	e.stopPrimaryPolls()
	for _, s := range open {
		e.retireSession(s, RetiredClosed)
	}
	for _, l := range fences {
		l.retire()
	}
	e.closeWatchers()
	e.wait()
	if r, ok := e.client.(ClientReleaser); ok {
		r.Release()
	}
}

// wait blocks until no task of the engine runs.
func (e *Engine) wait() {
	e.running.WaitWith(func(idle <-chan struct{}) bool {
		return e.spawn.Wait(context.Background(), idle) == nil
	})
}

// retireLink retires l with reason: the session it belongs to, if any, is
// retired (and forgotten as its node's current one); a fence or watcher
// link just closes.
func (e *Engine) retireLink(l *link, reason RetireReason) {
	if l.owner != nil {
		e.retireSession(l.owner, reason)
		return
	}
	e.mu.Lock()
	if e.fences[l.node] == l {
		delete(e.fences, l.node)
	}
	e.mu.Unlock()
	l.retire()
}

// retireSession closes s and forgets it as its node's current session;
// reason is reported to the observer once per session.
func (e *Engine) retireSession(s *session, reason RetireReason) {
	e.forget(s)
	s.link.retire()
	s.reportRetired(reason)
}

// forget drops s as its node's current session and from the open ones.
func (e *Engine) forget(s *session) {
	e.mu.Lock()
	if e.sessions[s.node] == s {
		delete(e.sessions, s.node)
	}
	delete(e.open, s)
	e.mu.Unlock()
}

// Queued returns the commands (each as its arguments, copied) that the
// sessions of a client whose connections do not pipeline hold queued,
// unwritten, behind a batch in flight — for tests that hold a reply back.
// It sends nothing.
func (e *Engine) Queued() [][]string {
	e.mu.Lock()
	open := sortedSessions(e.open)
	e.mu.Unlock()
	var out [][]string
	for _, s := range open {
		if d := s.link.drain; d != nil {
			out = d.queued(out)
		}
	}
	return out
}

// The engine is a Transport, its sessions Sessions.
var (
	_ Transport = (*Engine)(nil)
	_ Session   = (*session)(nil)
)
