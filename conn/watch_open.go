package conn

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/rueidis"
)

// openWatcher opens node's watcher: a dedicated connection whose
// invalidation pushes go to the pool's handler, with tracking switched to
// OPTIN NOLOOP (OFF first: rueidis turns OPTIN on by default, and a user's
// client may use another mode, which cannot be switched in place) and CLIENT
// INFO, pipelined in one round trip. A refusal (an error reply, or resp=2
// in CLIENT INFO) is remembered for the node; CLIENT INFO itself may be
// denied (the connection is then taken as RESP3, which rueidis negotiates
// wherever HELLO exists, and polling remains the safety net).
func (p *Pool) openWatcher(ctx context.Context, node string) (*watcher, error) {
	p.watch.mu.Lock()
	if w := p.watch.watchers[node]; w != nil && !w.dead.Load() {
		p.watch.mu.Unlock()
		return w, nil
	}
	p.watch.mu.Unlock()
	nodeClient, ok := p.client.Nodes()[node]
	if !ok {
		return nil, &Error{Class: NotSubmitted, Op: "watch", Addr: node, Err: fmt.Errorf("%w: %s", errUnknownNode, node)}
	}
	dedicated, _ := nodeClient.Dedicate()
	w := &watcher{node: node, client: dedicated}
	p.reportCommand(ctx, "CLIENT TRACKING")
	p.reportCommand(ctx, "CLIENT TRACKING")
	p.reportCommand(ctx, "CLIENT INFO")
	b := dedicated.B()
	results := dedicated.DoMulti(ctx, buildCommand(b, TrackingOffCommand()), buildCommand(b, TrackingOnCommand()),
		buildCommand(b, ClientInfoCommand()))
	for _, r := range results {
		if err := r.NonRedisError(); err != nil {
			p.retireWatcher(w)
			return nil, &Error{Class: NotSubmitted, Op: "watch", Addr: node, Err: err}
		}
	}
	for _, r := range results[:2] {
		if reply, _ := toReply(r); reply.Kind == ReplyError {
			return nil, p.refuse(w, reply.Text)
		}
	}
	if info, err := results[2].ToString(); err == nil && slices.Contains(strings.Fields(info), "resp=2") {
		return nil, p.refuse(w, "the connection speaks RESP2 (resp=2): no invalidation pushes")
	}
	// The hook goes on only now (nothing is tracked before the first
	// WatchRead): on a RESP2 connection rueidis would open a second socket
	// for it. It also moves the pipe to background mode, where pushes are
	// handed to the hook rather than dropped by a synchronous read.
	_ = dedicated.SetOnInvalidations(func(keys []rueidis.RedisMessage) { p.invalidated(w, keys) })
	p.watch.mu.Lock()
	defer p.watch.mu.Unlock()
	if p.watch.closed {
		w.closing.Store(true)
		p.closeSocket(w)
		return nil, &Error{Class: NotSubmitted, Op: "watch", Addr: node, Err: ErrPoolClosed}
	}
	if p.watch.watchers == nil {
		p.watch.watchers = map[string]*watcher{}
	}
	p.watch.watchers[node] = w
	w.served = true
	return w, nil
}

// refuse remembers that node refused tracking (why: the server's reply)
// for as long as the node's current session lasts (see refusal), retires
// w and returns the error matching ErrTrackingRefused. A reply that only
// says the node cannot serve now (LOADING, BUSY, MASTERDOWN…) is no
// refusal: w is retired all the same and the error matches ErrDidNotRun,
// so the next read tries a fresh watcher. Either way the keys w tracked
// are tracked no more: retireWatcher tells the handler.
func (p *Pool) refuse(w *watcher, why string) error {
	if IsDidNotRunReply(why) {
		p.retireWatcher(w)
		return &Error{Class: Definite, Op: "watch", Addr: w.node, Err: fmt.Errorf("%w: %s", ErrDidNotRun, why)}
	}
	err := fmt.Errorf("%w: %s", ErrTrackingRefused, why)
	cur := p.currentSession(w.node)
	p.watch.mu.Lock()
	if p.watch.refused == nil {
		p.watch.refused = map[string]refusal{}
	}
	p.watch.refused[w.node] = refusal{err: err, session: cur}
	p.watch.mu.Unlock()
	p.retireWatcher(w)
	return &Error{Class: Definite, Op: "watch", Addr: w.node, Err: err}
}

// TrackingRefused reports whether node refused tracking (see
// ErrTrackingRefused); it sends nothing.
func (p *Pool) TrackingRefused(node string) bool {
	cur := p.currentSession(node)
	p.watch.mu.Lock()
	defer p.watch.mu.Unlock()
	return p.refusedNow(node, cur) != nil
}

// invalidated is w's push hook, on its reader goroutine: keys nil means
// everything w tracked is forgotten (FLUSHALL, or the connection ended), so
// w is retired (which tells the handler) and the next WatchRead opens a
// fresh one.
func (p *Pool) invalidated(w *watcher, msgs []rueidis.RedisMessage) {
	if w.closing.Load() {
		return
	}
	if msgs == nil {
		p.retireWatcher(w)
		return
	}
	keys := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if k, err := m.ToString(); err == nil {
			keys = append(keys, k)
		}
	}
	p.watch.mu.Lock()
	fn := p.watch.handler
	p.watch.mu.Unlock()
	if fn != nil {
		fn(w.node, keys)
	}
}

// slotMoved tells the handler that everything tracked on node counts as
// changed (keys nil), as after a reconnect: a slot of node moved away (a
// MOVED answer named another owner), so the keys tracked there may live
// elsewhere and their changes reach no watcher until they are read again.
func (p *Pool) slotMoved(node string) {
	p.watch.mu.Lock()
	fn := p.watch.handler
	p.watch.mu.Unlock()
	if fn != nil {
		fn(node, nil)
	}
}

// dropStaleWatchers retires, in Sentinel mode, the watchers of nodes other
// than primary (a failover moved the primary): the keys they tracked are
// read again, and so tracked, on the new primary.
func (p *Pool) dropStaleWatchers(primary string) {
	var stale []*watcher
	p.watch.mu.Lock()
	for node, w := range p.watch.watchers {
		if node != primary {
			stale = append(stale, w)
		}
	}
	p.watch.mu.Unlock()
	for _, w := range stale {
		p.retireWatcher(w)
	}
}

// retireWatcher is the one way a watcher ends, whatever the reason (its
// socket failed under a read, its connection ended or the server flushed,
// an error reply to CLIENT CACHING, a Sentinel failover, a failed setup):
// once per watcher, w stops being its node's watcher, its socket is closed
// in the background (Pool.Close waits), and, if w was ever handed to a
// read (so it may have tracked keys), the handler is told, before
// retireWatcher returns, that everything tracked on w's node is forgotten
// (keys nil): nothing tracks those keys any more, so their holders and
// waiters must read again. Only Pool.Close (closeWatchers) ends watchers
// without telling: nothing can read after it.
func (p *Pool) retireWatcher(w *watcher) {
	if w.closing.Swap(true) {
		return
	}
	w.dead.Store(true)
	p.watch.mu.Lock()
	if p.watch.watchers[w.node] == w {
		delete(p.watch.watchers, w.node)
	}
	fn, tell := p.watch.handler, w.served && !p.watch.closed
	p.watch.mu.Unlock()
	p.closeSocket(w)
	p.suspectNode(w.node) // what ended the watcher may have closed the node's session too
	if tell && fn != nil {
		fn(w.node, nil)
	}
}

// closeSocket closes w's socket in the background (Pool.Close waits); w
// is closing already.
func (p *Pool) closeSocket(w *watcher) {
	w.dead.Store(true)
	p.closing.Add()
	go func() {
		defer p.closing.Done()
		w.client.Close()
	}()
}

// closeWatchers closes every watcher for good (Pool.Close), telling the
// handler nothing.
func (p *Pool) closeWatchers() {
	p.watch.mu.Lock()
	p.watch.closed = true
	watchers := p.watch.watchers
	p.watch.watchers = nil
	p.watch.mu.Unlock()
	for _, w := range watchers {
		if !w.closing.Swap(true) {
			p.closeSocket(w)
		}
	}
}
