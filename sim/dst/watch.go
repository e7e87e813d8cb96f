package dst

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/respire-go/respire/conn"
)

// This file is push in the simulation, as conn does it: one watcher
// connection per node and process (HELLO 3, CLIENT TRACKING OFF, CLIENT
// TRACKING ON OPTIN NOLOOP, CLIENT INFO), on which WatchRead(Many) tracks
// and reads keys (CLIENT CACHING YES + GET, one round trip per node). The
// engine's invalidations (sim.Engine.TakePushes, taken after every command
// and every active-expiry cycle) travel back on that connection in order
// with its replies, and reach the driver's handler as events; a watcher
// that ends tells the handler that everything tracked on its node is
// forgotten (keys nil). Push faults lose or delay invalidations on a live
// watcher.

// watcher is one tracking connection of a process to a node.
type watcher struct {
	t       *simTransport
	node    *node
	conn    *connection
	done    chan struct{} // closed once the handshake answered (or failed)
	err     error         // the handshake's failure
	served  bool          // handed to a read: keys may be tracked on it
	retired bool
}

// watchRefusal is a node's refusal of tracking, remembered while its
// generation lasts (a failover's new server asks again).
type watchRefusal struct {
	generation int
	err        error
}

// WatchRead implements conn.Transport: WatchReadMany of one key.
func (t *simTransport) WatchRead(ctx context.Context, key string) (string, string, bool, error) {
	var one [1]conn.WatchReadResult
	r := t.WatchReadMany(ctx, []string{key}, one[:0])[0]
	return r.Node, r.Token, r.Found, r.Err
}

// WatchReadMany implements conn.Transport as conn.Pool does: the keys are
// grouped by node, each group read in one round trip on the node's
// watcher (all groups on the wire at once); a key answered with MOVED is
// read again on its new owner (the slot map learns it).
func (t *simTransport) WatchReadMany(ctx context.Context, keys []string, out []conn.WatchReadResult) []conn.WatchReadResult {
	return t.watchReadMany(ctx, keys, nil, out)
}

// watchReadMany reads keys (GET), or with members the members of keys
// (ZSCORE keys[i] members[i]), on their watchers.
func (t *simTransport) watchReadMany(ctx context.Context, keys, members []string, out []conn.WatchReadResult) []conn.WatchReadResult {
	out = slices.Grow(out[:0], len(keys))[:len(keys)]
	clear(out)
	pending := make([]int, len(keys))
	for i := range pending {
		pending[i] = i
	}
	for hop := 0; hop <= maxRedirects && len(pending) > 0; hop++ {
		pending = t.readGroups(ctx, keys, members, pending, out)
	}
	for _, i := range pending {
		out[i].Err = &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: out[i].Node, Err: errors.New("too many redirects")}
	}
	return out
}

// watchGroup is the keys of one hop that go to one node.
type watchGroup struct {
	n   *node
	w   *watcher
	idx []int
	x   *pending
}

// readGroups sends one hop of reads and returns the indexes of the keys
// to read again (redirected).
func (t *simTransport) readGroups(ctx context.Context, keys, members []string, pending []int, out []conn.WatchReadResult) []int {
	var groups []*watchGroup
	for _, i := range pending {
		n := t.routeFor(keys[i])
		g := slices.IndexFunc(groups, func(g *watchGroup) bool { return g.n == n })
		if g < 0 {
			g = len(groups)
			groups = append(groups, &watchGroup{n: n})
		}
		groups[g].idx = append(groups[g].idx, i)
	}
	for _, g := range groups {
		var err error
		if g.w, err = t.watcherFor(ctx, g.n); err != nil {
			for _, i := range g.idx {
				out[i] = conn.WatchReadResult{Node: g.n.addr, Err: err}
			}
			continue
		}
		cmds := make([]conn.Command, 0, 2*len(g.idx))
		for _, i := range g.idx {
			read := conn.OwnerCommand(keys[i])
			if members != nil {
				read = conn.ScoreCommand(keys[i], members[i])
			}
			cmds = append(cmds, conn.CachingYesCommand(), read)
		}
		g.x = t.sendAll(g.w.conn, cmds)
	}
	var again []int
	for _, g := range groups {
		if g.x != nil {
			again = t.settleGroup(ctx, g, keys, members != nil, out, again)
		}
	}
	return again
}

// sendAll writes cmds, which belong to no lock operation, on c.
func (t *simTransport) sendAll(c *connection, cmds []conn.Command) *pending {
	x := &pending{replies: make([]conn.Reply, len(cmds)), done: make(chan struct{})}
	for i, cmd := range cmds {
		t.w.write(c, &request{cmd: cmd,
			onReply: func(r conn.Reply) {
				x.replies[i] = r
				if x.got++; x.got == len(cmds) {
					x.finish()
				}
			},
			onLost: func(err error) {
				if !x.over {
					x.lost = err
					x.finish()
				}
			}})
	}
	return x
}

// settleGroup waits for g's replies and turns them into results, as
// conn's settleWatchRead: a transport failure is NotSubmitted and ends the
// watcher (unless the caller's ctx ended the wait), an error reply to
// CLIENT CACHING is a refusal, MOVED is read again.
func (t *simTransport) settleGroup(ctx context.Context, g *watchGroup, keys []string, score bool, out []conn.WatchReadResult,
	again []int) []int {
	err := t.p.spawn.Wait(ctx, g.x.done)
	if err == nil && g.x.lost != nil {
		err = g.x.lost
		t.retireWatcher(g.w)
	}
	if err != nil {
		g.x.over = true
		for _, i := range g.idx {
			out[i] = conn.WatchReadResult{Node: g.n.addr, Err: &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: g.n.addr, Err: err}}
		}
		return again
	}
	for k, i := range g.idx {
		caching, get := g.x.replies[2*k], g.x.replies[2*k+1]
		out[i] = conn.WatchReadResult{Node: g.n.addr}
		if caching.Kind == conn.ReplyError {
			out[i].Err = t.refuse(g.w, caching.Text)
			continue
		}
		if rd, ok := conn.ParseRedirect(get.Text); ok && get.Kind == conn.ReplyError {
			if to := t.w.nodeByAddr(rd.Addr); to != nil && !rd.Ask {
				t.learnSlot(keys[i], g.n, to)
			}
			again = append(again, i)
			continue
		}
		token, found, serr := conn.WatchedResult(get, score)
		if serr != nil {
			out[i].Err = &conn.Error{Class: conn.Definite, Op: "watch", Addr: g.n.addr, Code: serr.Code, Err: serr}
			continue
		}
		out[i].Token, out[i].Found = token, found
	}
	return again
}

// watcherFor returns n's live watcher, opening one (shared by the readers
// that come meanwhile) when there is none; a node that refused tracking
// is refused at once while its generation lasts.
func (t *simTransport) watcherFor(ctx context.Context, n *node) (*watcher, error) {
	t.grow(n)
	if r := t.refused(n); r != nil {
		return nil, &conn.Error{Class: conn.Definite, Op: "watch", Addr: n.addr, Err: r}
	}
	for {
		wt := t.watchers[n.index]
		if wt == nil || wt.retired {
			wt = t.openWatcher(n)
		}
		if err := t.p.spawn.Wait(ctx, wt.done); err != nil {
			return nil, &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: n.addr, Err: err}
		}
		if wt.err != nil {
			return nil, wt.err
		}
		if !wt.retired { // else it ended while this reader waited: open a fresh one
			wt.served = true
			return wt, nil
		}
	}
}

// refused returns n's refusal of tracking, if it still holds.
func (t *simTransport) refused(n *node) error {
	if r, ok := t.refusals[n.index]; ok && r.generation == n.generation {
		return r.err
	}
	return nil
}

// openWatcher connects to n and sends the watcher's handshake.
func (t *simTransport) openWatcher(n *node) *watcher {
	w := t.w
	wt := &watcher{t: t, node: n, done: make(chan struct{})}
	wt.conn = w.open(t.p, n, "watch")
	wt.conn.watch = wt
	t.watchers[n.index] = wt
	x := t.sendAll(wt.conn, []conn.Command{{Args: []string{"HELLO", "3"}, Key: -1}, conn.TrackingOffCommand(),
		conn.TrackingOnCommand(), conn.ClientInfoCommand()})
	bound := max(w.opt.commandTimeout(), w.opt.LeaseMin)
	timer := t.p.clock.AfterFunc(bound, func() {
		if !x.over {
			x.lost = errHandshakeTimeout
			x.finish()
		}
	})
	t.p.spawn.Go(func() {
		_ = t.p.spawn.Wait(context.Background(), x.done)
		timer.Stop()
		wt.err = t.watcherReady(wt, x)
		close(wt.done)
	})
	return wt
}

// watcherReady judges the watcher's handshake: a transport failure ends
// it (not submitted), an error reply to CLIENT TRACKING refuses tracking.
func (t *simTransport) watcherReady(wt *watcher, x *pending) error {
	n := wt.node
	if x.lost != nil {
		t.retireWatcher(wt)
		return &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: n.addr, Err: x.lost}
	}
	for _, r := range x.replies[1:3] {
		if r.Kind == conn.ReplyError {
			return t.refuse(wt, r.Text)
		}
	}
	if wt.retired {
		return &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: n.addr, Err: conn.ErrSessionRetired}
	}
	n.watchers[wt.conn.clientID] = wt.conn
	return nil
}

// refuse remembers that n refused tracking (or, for a reply saying it
// cannot serve now, only retires the watcher) and returns the error.
func (t *simTransport) refuse(wt *watcher, why string) error {
	t.retireWatcher(wt)
	if conn.IsDidNotRunReply(why) {
		return &conn.Error{Class: conn.Definite, Op: "watch", Addr: wt.node.addr, Err: fmt.Errorf("%w: %s", conn.ErrDidNotRun, why)}
	}
	err := fmt.Errorf("%w: %s", conn.ErrTrackingRefused, why)
	if t.refusals == nil {
		t.refusals = map[int]watchRefusal{}
	}
	t.refusals[wt.node.index] = watchRefusal{generation: wt.node.generation, err: err}
	return &conn.Error{Class: conn.Definite, Op: "watch", Addr: wt.node.addr, Err: err}
}

// retireWatcher ends wt, once: it stops being its node's watcher, its
// connection is closed, and, if it served reads, the handler is told that
// everything tracked on its node is forgotten.
func (t *simTransport) retireWatcher(wt *watcher) {
	if wt.retired {
		return
	}
	wt.retired = true
	n := wt.node
	if t.watchers[n.index] == wt {
		t.watchers[n.index] = nil
	}
	if n.watchers[wt.conn.clientID] == wt.conn {
		delete(n.watchers, wt.conn.clientID)
	}
	t.w.retireConn(wt.conn)
	if wt.served && t.handler != nil {
		t.w.trace.logf(t.w, t.p, "", "watcher of %s ended: everything tracked there is forgotten", n.name)
		t.handler(n.addr, nil)
	}
}

// pushArrived hands one invalidation that reached watcher connection c to
// the driver's handler (a flush ends the watcher, as in conn).
func (w *world) pushArrived(c *connection, a answer) {
	wt := c.watch
	if wt == nil || wt.retired {
		return
	}
	if a.flush {
		wt.t.retireWatcher(wt)
		return
	}
	w.stats.Pushes++
	w.trace.logf(w, c.proc, "", "push from %s: invalidate %s", c.node.name, strings.Join(a.keys, " "))
	if h := wt.t.handler; h != nil {
		h(c.node.addr, a.keys)
	}
}

// WatchScoreMany implements conn.Transport as conn.Pool does: WatchReadMany
// for sorted-set members (a semaphore's permits, a read/write lock's
// readers), CLIENT CACHING YES + ZSCORE key member per read, so that the
// next change of the set sends one invalidation; Found reports whether the
// member is in the set, Token is empty.
func (t *simTransport) WatchScoreMany(ctx context.Context, reads []conn.MemberRead, out []conn.WatchReadResult) []conn.WatchReadResult {
	t.w.stats.MemberWatchReads += len(reads)
	keys, members := make([]string, len(reads)), make([]string, len(reads))
	for i, r := range reads {
		keys[i], members[i] = r.Key, r.Member
	}
	return t.watchReadMany(ctx, keys, members, out)
}
