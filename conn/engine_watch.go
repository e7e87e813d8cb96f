package conn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// This file is the engine's push: one watcher per node with client-side
// tracking (OPTIN NOLOOP), on which WatchReadMany arms the tracking of keys
// (CLIENT CACHING YES + GET or ZSCORE) and reads them in the same round
// trip. The server then sends one invalidation when a key next changes —
// deleted, expired, written, PEXPIREd — and the engine hands its key to the
// handler set with SetInvalidationHandler. A watcher only reads; it never
// carries a lock command.
//
// A watcher is the client's Listener and a reader: the Listener's own
// connection when it can carry commands while it listens (RESP3 with a
// background reader: rueidis, valkey-go; tracking ON on itself), or a
// connection of its own whose tracking is redirected to the listener
// (go-redis: REDIRECT <listener's CLIENT ID>). Every end of a watcher tells
// the handler that everything tracked on its node is forgotten (keys nil).

// pushState is the engine's watchers, one per node, and what nodes refused.
type pushState struct {
	mu       sync.Mutex
	handler  func(node string, keys []string)
	watchers map[string]*pushWatcher
	refused  map[string]pushRefusal // node → its refusal, while the session it was learned with lasts
	closed   bool
}

// pushRefusal is a node's refusal of tracking, learned while session was
// the node's current session (nil: none was open): capabilities are
// learned per physical connection, so once that session is retired the
// next read asks again.
type pushRefusal struct {
	err     error
	session *session
}

// pushWatcher is one node's tracking watcher.
type pushWatcher struct {
	node     string
	listener Listener
	reader   *link
	keep     Timer       // listen-only: the reader's liveness check (see keepReader)
	dead     atomic.Bool // retired, or its connection ended: open a fresh one
	closing  atomic.Bool // retired (retireWatcher ran or began)
	served   bool        // handed to a read, so it may have tracked keys; under push.mu
}

// SetInvalidationHandler implements Transport: fn receives the keys whose
// tracking ended on node — a change or expiry of keys (on the client's
// reader goroutine), or everything tracked there (keys nil: read again)
// whenever a watcher that served reads ends, for whatever reason, and when
// a slot of node moved away. A nil call made because a read ended the
// watcher comes on that read's goroutine before the read returns. Only
// Close ends watchers silently. fn must not block and may be called
// concurrently. Set it before the first WatchRead.
func (e *Engine) SetInvalidationHandler(fn func(node string, keys []string)) {
	e.push.mu.Lock()
	e.push.handler = fn
	e.push.mu.Unlock()
}

// WatchRead implements Transport: WatchReadMany of one key.
func (e *Engine) WatchRead(ctx context.Context, key string) (node, token string, found bool, err error) {
	var one [1]WatchReadResult
	r := e.WatchReadMany(ctx, []string{key}, one[:0])[0]
	return r.Node, r.Token, r.Found, r.Err
}

// TrackingRefused reports whether node refused tracking (see
// ErrTrackingRefused); it sends nothing.
func (e *Engine) TrackingRefused(node string) bool {
	cur := e.currentSession(node)
	e.push.mu.Lock()
	defer e.push.mu.Unlock()
	return e.refusedNow(node, cur) != nil
}

// currentSession returns node's current session, or nil; it sends nothing.
func (e *Engine) currentSession(node string) *session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sessions[node]
}

// refusedNow returns node's refusal if it still holds; push.mu is held.
func (e *Engine) refusedNow(node string, cur *session) error {
	r, ok := e.push.refused[node]
	if !ok {
		return nil
	}
	if r.session != cur {
		delete(e.push.refused, node)
		return nil
	}
	return r.err
}

// watcherFor returns node's live watcher, opening one (once at a time per
// node) when there is none.
func (e *Engine) watcherFor(ctx context.Context, node string) (*pushWatcher, error) {
	cur := e.currentSession(node)
	e.push.mu.Lock()
	if e.push.closed {
		e.push.mu.Unlock()
		return nil, &Error{Class: NotSubmitted, Op: "watch", Addr: node, Err: ErrPoolClosed}
	}
	if why := e.refusedNow(node, cur); why != nil {
		e.push.mu.Unlock()
		return nil, &Error{Class: Definite, Op: "watch", Addr: node, Err: why}
	}
	if w := e.push.watchers[node]; w != nil && !w.dead.Load() {
		w.served = true
		e.push.mu.Unlock()
		return w, nil
	}
	e.push.mu.Unlock()
	val, err := e.opened(ctx, "watch "+node, "watch", node, func(octx context.Context) (any, error) {
		return e.openWatcher(octx, node)
	})
	if err != nil {
		return nil, err
	}
	w := val.(*pushWatcher)
	e.push.mu.Lock()
	w.served = true
	e.push.mu.Unlock()
	return w, nil
}

// openWatcher opens node's watcher: the client's Listener, and tracking
// switched to OPTIN NOLOOP on its reader (OFF first: a client may have
// turned tracking on with other options, which cannot be switched in
// place), with CLIENT INFO, in one round trip. A refusal (an error reply,
// a listener that speaks RESP2, a client without push) is remembered for
// the node.
func (e *Engine) openWatcher(ctx context.Context, node string) (*pushWatcher, error) {
	e.push.mu.Lock()
	if w := e.push.watchers[node]; w != nil && !w.dead.Load() {
		e.push.mu.Unlock()
		return w, nil
	}
	e.push.mu.Unlock()
	if err := e.clientClosed(); err != nil {
		return nil, &Error{Class: NotSubmitted, Op: "watch", Addr: node, Err: err}
	}
	w := &pushWatcher{node: node}
	l, err := e.client.Listen(ctx, node, func(keys []string) { e.invalidated(w, keys) })
	if errors.Is(err, ErrPushUnsupported) {
		return nil, e.refuse(w, err.Error())
	}
	if err != nil {
		return nil, &Error{Class: NotSubmitted, Op: "watch", Addr: node, Err: err}
	}
	e.push.mu.Lock()
	w.listener = l
	e.push.mu.Unlock()
	on := TrackingOnCommand()
	var reader *link
	if c := l.Conn(); c != nil {
		reader = e.newLink(node, c, true)
	} else if c, err = e.client.Dial(ctx, node); err == nil {
		reader, on = e.newLink(node, c, true), TrackingRedirectCommand(l.ID())
	} else {
		e.retireWatcher(w)
		return nil, &Error{Class: NotSubmitted, Op: "watch", Addr: node, Err: err}
	}
	if err := e.setReader(w, reader); err != nil {
		return nil, err
	}
	if err := e.setUpWatcher(ctx, w, on); err != nil {
		return nil, err
	}
	return w, e.registerWatcher(w)
}

// errListenerEnded: a watcher's listener ended while the watcher opened.
var errListenerEnded = errors.New("the listening connection ended while the watcher opened")

// setReader makes reader w's reader; when w is closing already (its
// listener ended during the open, and closeWatcher ran before the reader
// existed), it closes the reader and the listener itself and fails the
// open.
func (e *Engine) setReader(w *pushWatcher, reader *link) error {
	e.push.mu.Lock()
	w.reader = reader
	closing := w.closing.Load()
	e.push.mu.Unlock()
	if !closing {
		return nil
	}
	reader.retire()
	e.background(w.listener.Close)
	return &Error{Class: NotSubmitted, Op: "watch", Addr: w.node, Err: errListenerEnded}
}

// setUpWatcher switches tracking on for w's reader.
func (e *Engine) setUpWatcher(ctx context.Context, w *pushWatcher, on Command) error {
	cmds := [3]Command{TrackingOffCommand(), on, ClientInfoCommand()}
	var replies [3]Reply
	if err := w.reader.exchange(ctx, "watch", cmds[:], replies[:], nil, nil); err != nil {
		e.retireWatcher(w)
		return &Error{Class: NotSubmitted, Op: "watch", Addr: w.node, Err: err}
	}
	for _, r := range replies[:2] {
		if r.Kind == ReplyError {
			return e.refuse(w, r.Text)
		}
	}
	self := w.listener.Conn() != nil
	if info := replies[2]; self && info.Kind != ReplyError && slices.Contains(strings.Fields(info.Text), "resp=2") {
		return e.refuse(w, "the connection speaks RESP2 (resp=2): no invalidation pushes")
	}
	return nil
}

// registerWatcher makes w its node's watcher.
func (e *Engine) registerWatcher(w *pushWatcher) error {
	e.push.mu.Lock()
	if e.push.closed {
		e.push.mu.Unlock()
		w.closing.Store(true)
		e.closeWatcher(w)
		return &Error{Class: NotSubmitted, Op: "watch", Addr: w.node, Err: ErrPoolClosed}
	}
	if w.closing.Load() { // its listener ended meanwhile: retireWatcher closed it
		e.push.mu.Unlock()
		return &Error{Class: NotSubmitted, Op: "watch", Addr: w.node, Err: errListenerEnded}
	}
	if e.push.watchers == nil {
		e.push.watchers = map[string]*pushWatcher{}
	}
	e.push.watchers[w.node] = w
	if w.listener.Conn() == nil {
		w.keep = e.clock.AfterFunc(e.keepEvery(), func() { e.keepReader(w) })
	}
	e.push.mu.Unlock()
	return nil
}

// keepEvery is how often a listen-only watcher's reader is checked: the
// idle-check period, at least keepFloor.
func (e *Engine) keepEvery() time.Duration {
	return max(time.Duration(e.idleCheck.Load()), keepFloor)
}

// keepFloor bounds how often a reader's liveness is checked.
const keepFloor = 100 * time.Millisecond

// keepReader checks, once per idle-check period, the reader of a watcher
// whose tracking is redirected to a listen-only connection: when only the
// reader is killed (CLIENT KILL of the tracking client, a reset), nothing
// tells anyone — the client reads no idle socket, and the server tells the
// listener nothing — so the keys it tracked would be forgotten silently
// until the next read. A reader idle for the period answers a PING (the
// idle check); if it cannot, the watcher ends, which tells the handler
// (keys nil) so that every key is read again.
func (e *Engine) keepReader(w *pushWatcher) {
	if w.closing.Load() {
		return
	}
	e.background(func() {
		ctx, cancel := Bound(e.clock, e.stop, pingBound)
		defer cancel()
		if idle := int64(e.clock.Now()) - w.reader.lastReply.Load(); idle >= e.idleCheck.Load() {
			var reply [1]Reply // through the reader's drainer: one Do at a time on its Conn
			if err := w.reader.exchange(ctx, "watch", pingCommand[:], reply[:], nil, nil); err != nil && e.stop.Err() == nil {
				e.retireWatcher(w)
				return
			}
		}
		e.push.mu.Lock()
		defer e.push.mu.Unlock()
		if !w.closing.Load() && w.keep != nil {
			w.keep.Reset(e.keepEvery())
		}
	})
}

// refuse remembers that w's node refused tracking (why: the server's
// reply), retires w and returns the error matching ErrTrackingRefused. A
// reply that only says the node cannot serve now (LOADING, BUSY,
// MASTERDOWN…) is no refusal: the error matches ErrDidNotRun.
func (e *Engine) refuse(w *pushWatcher, why string) error {
	if IsDidNotRunReply(why) {
		e.retireWatcher(w)
		return &Error{Class: Definite, Op: "watch", Addr: w.node, Err: fmt.Errorf("%w: %s", ErrDidNotRun, why)}
	}
	err := fmt.Errorf("%w: %s", ErrTrackingRefused, why)
	cur := e.currentSession(w.node)
	e.push.mu.Lock()
	if e.push.refused == nil {
		e.push.refused = map[string]pushRefusal{}
	}
	e.push.refused[w.node] = pushRefusal{err: err, session: cur}
	e.push.mu.Unlock()
	e.retireWatcher(w)
	return &Error{Class: Definite, Op: "watch", Addr: w.node, Err: err}
}

// invalidated is w's push handler, on the client's reader goroutine: keys
// nil means everything w tracked is forgotten, so w is retired (which
// tells the handler) and the next read opens a fresh one.
func (e *Engine) invalidated(w *pushWatcher, keys []string) {
	if w.closing.Load() {
		return
	}
	if keys == nil {
		e.retireWatcher(w)
		return
	}
	e.push.mu.Lock()
	fn := e.push.handler
	e.push.mu.Unlock()
	if fn != nil {
		fn(w.node, keys)
	}
}

// slotMoved tells the handler that everything tracked on node counts as
// changed (keys nil): a slot of node moved away.
func (e *Engine) slotMoved(node string) {
	e.push.mu.Lock()
	fn := e.push.handler
	e.push.mu.Unlock()
	if fn != nil {
		fn(node, nil)
	}
}

// dropStaleWatchers retires, in Sentinel mode, the watchers of nodes other
// than primary (a failover moved the primary).
func (e *Engine) dropStaleWatchers(primary string) {
	var stale []*pushWatcher
	e.push.mu.Lock()
	for _, w := range sortedWatchers(e.push.watchers) {
		if w.node != primary {
			stale = append(stale, w)
		}
	}
	e.push.mu.Unlock()
	for _, w := range stale {
		e.retireWatcher(w)
	}
}

// sortedWatchers returns the watchers of m in the order of their nodes.
func sortedWatchers(m map[string]*pushWatcher) []*pushWatcher {
	out := make([]*pushWatcher, 0, len(m))
	for _, node := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[node])
	}
	return out
}

// retireWatcher is the one way a watcher ends, whatever the reason: once
// per watcher it stops being its node's watcher, its connections close on
// a task of the engine, the node's session is made to PING before its next
// command (what ended the watcher may have closed it too), and, if w was
// ever handed to a read, the handler is told — before retireWatcher
// returns — that everything tracked on w's node is forgotten (keys nil).
func (e *Engine) retireWatcher(w *pushWatcher) {
	if w.closing.Swap(true) {
		return
	}
	w.dead.Store(true)
	e.push.mu.Lock()
	if e.push.watchers[w.node] == w {
		delete(e.push.watchers, w.node)
	}
	fn, tell := e.push.handler, w.served && !e.push.closed
	e.push.mu.Unlock()
	e.closeWatcher(w)
	e.suspectNode(w.node)
	if tell && fn != nil {
		fn(w.node, nil)
	}
}

// closeWatcher closes w's connections (w is closing already).
func (e *Engine) closeWatcher(w *pushWatcher) {
	w.dead.Store(true)
	e.push.mu.Lock()
	if w.keep != nil {
		w.keep.Stop()
	}
	reader, l := w.reader, w.listener // set under the mutex by openWatcher
	e.push.mu.Unlock()
	if reader != nil {
		reader.retire()
	}
	if l != nil {
		e.background(l.Close) // idempotent: also when the reader is the listener's own connection
	}
}

// suspectNode makes the next command on node's current session check its
// socket first, with the idle check's PING whatever its idle time: another
// connection of ours to node broke, which a restart, a failover or CLIENT
// KILL TYPE normal does to every connection at once (rule
// KnownClosedSessionIsSkipped). It sends nothing itself.
func (e *Engine) suspectNode(node string) {
	if s := e.currentSession(node); s != nil {
		s.link.suspect.Store(true)
	}
}

// closeWatchers closes every watcher for good (Close), telling the
// handler nothing.
func (e *Engine) closeWatchers() {
	e.push.mu.Lock()
	e.push.closed = true
	watchers := sortedWatchers(e.push.watchers)
	e.push.watchers = nil
	e.push.mu.Unlock()
	for _, w := range watchers {
		if !w.closing.Swap(true) {
			e.closeWatcher(w)
		}
	}
}
