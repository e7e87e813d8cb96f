//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/push"

	"github.com/respire-go/respire/conn"
)

// invalidateHandler hands a listener's "invalidate" pushes to the
// transport's handler, on the listener's goroutine.
type invalidateHandler struct{ w *watcher }

// HandlePushNotification receives ["invalidate", keys] (keys nil: the node
// forgot everything it tracked, after FLUSHALL or FLUSHDB).
func (h invalidateHandler) HandlePushNotification(_ context.Context, _ push.NotificationHandlerContext, n []interface{}) error {
	w := h.w
	if w.ended.Load() {
		return nil
	}
	var list []interface{}
	if len(n) > 1 {
		list, _ = n[1].([]interface{})
	}
	if list == nil {
		w.t.retireWatcher(w)
		return nil
	}
	keys := make([]string, 0, len(list))
	for _, k := range list {
		if s, ok := k.(string); ok {
			keys = append(keys, s)
		}
	}
	w.t.watch.mu.Lock()
	fn := w.t.watch.handler
	w.t.watch.mu.Unlock()
	if fn != nil {
		fn(w.node, keys)
	}
	return nil
}

// receive keeps the listener in its blocking read (go-redis' push
// processor runs the handler for each push while it waits) until the read
// fails: the watcher then ends. An error reply is no failure: the one
// command the listener sends is the PING that opened it, and a user
// without +ping gets NOPERM for it (rule GoRedisWatcherNeedsNoPing).
func (w *watcher) receive() {
	for {
		if _, err := w.sub.Receive(context.Background()); err != nil {
			var reply redis.Error
			if errors.As(err, &reply) {
				continue // the socket answered
			}
			w.t.retireWatcher(w)
			return
		}
	}
}

// keepAlive PINGs the reader when it had no reply for an idle-check
// period: a reader closed while idle tracks nothing any more, and only a
// command on it would tell.
func (w *watcher) keepAlive() {
	period := max(time.Duration(w.t.idleCheck.Load()), 10*time.Millisecond)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-tick.C:
		}
		if monoNow()-w.last.Load() < int64(period) {
			continue
		}
		select {
		case w.turn <- struct{}{}:
		case <-w.quit:
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), period+time.Second)
		rs, err := w.w.roundTrip(ctx, w.reader, []conn.Command{conn.PingCommand()})
		cancel()
		<-w.turn
		if err != nil || rs[0].transport != nil {
			w.t.retireWatcher(w)
			return
		}
		w.last.Store(monoNow())
	}
}

// close ends w's connections at once; idempotent. The listener's read
// returns, and so does a round trip on the reader: closing its private
// client closes the socket under it (closing the Conn alone would not).
func (w *watcher) close() {
	w.ended.Store(true)
	w.closing.Do(func() {
		close(w.quit)
		if w.sub != nil {
			_ = w.sub.Close()
		}
		w.closeClients()
	})
}

// closeClients closes w's sockets, which ends every I/O on them (a
// handshake's included), and its private clients; they are set before w
// is shared, so that Close may call it on a watcher still opening.
func (w *watcher) closeClients() {
	w.sockets.close()
	_ = w.listener.Close()
	_ = w.readers.Close()
}

// retireWatcher is the one way a watcher ends (conn's retireWatcher): once,
// it stops being its node's watcher, its connections close, the node's
// session is suspected, and the handler is told (keys nil) if it served a
// read, before retireWatcher returns. Only Close ends watchers silently.
func (t *Transport) retireWatcher(w *watcher) {
	if w.retired.Swap(true) {
		return
	}
	w.ended.Store(true)
	t.watch.mu.Lock()
	if t.watch.watchers[w.node] == w {
		delete(t.watch.watchers, w.node)
	}
	fn, tell := t.watch.handler, w.served && !t.watch.closed
	w.served = false
	t.watch.mu.Unlock()
	w.close()
	t.suspectNode(w.node)
	if tell && fn != nil {
		fn(w.node, nil)
	}
}

// closeWatchers ends every watcher for good (Close), telling nothing.
func (t *Transport) closeWatchers() {
	t.watch.mu.Lock()
	t.watch.closed = true
	ws, opening := t.watch.watchers, t.watch.pending
	t.watch.watchers, t.watch.pending = nil, nil
	t.watch.mu.Unlock()
	for _, w := range ws {
		w.close()
	}
	for w := range opening {
		w.closeClients() // its open fails and closes the rest
	}
}

// dropStaleWatchers retires, in Sentinel mode, the watchers of nodes other
// than primary: the master moved.
func (t *Transport) dropStaleWatchers(primary string) {
	t.watch.mu.Lock()
	var stale []*watcher
	for node, w := range t.watch.watchers {
		if node != primary {
			stale = append(stale, w)
		}
	}
	t.watch.mu.Unlock()
	for _, w := range stale {
		t.retireWatcher(w)
	}
}

// slotMoved tells the handler that everything tracked on node counts as
// changed: a MOVED said a slot of node lives elsewhere now.
func (t *Transport) slotMoved(node string) {
	t.watch.mu.Lock()
	fn := t.watch.handler
	t.watch.mu.Unlock()
	if fn != nil {
		fn(node, nil)
	}
}

// WatchReadMany implements conn.Transport as conn.Pool's does: per node one
// round trip of CLIENT CACHING YES + GET per key on its watcher's reader,
// the nodes concurrently; a MOVED key is sent again to the node it names.
// Results are in keys' order, in out[:0] grown.
func (t *Transport) WatchReadMany(ctx context.Context, keys []string, out []conn.WatchReadResult) []conn.WatchReadResult {
	return t.watchReadMany(ctx, keys, nil, out)
}

// WatchScoreMany implements conn.Transport as conn.Pool's does: per node one
// round trip of CLIENT CACHING YES + ZSCORE key member per read on its
// watcher's reader; Found reports whether the member is in the set.
func (t *Transport) WatchScoreMany(ctx context.Context, reads []conn.MemberRead, out []conn.WatchReadResult) []conn.WatchReadResult {
	keys, members := make([]string, len(reads)), make([]string, len(reads))
	for i, r := range reads {
		keys[i], members[i] = r.Key, r.Member
	}
	return t.watchReadMany(ctx, keys, members, out)
}

// watchReadMany reads keys (GET), or with members the members of keys
// (ZSCORE keys[i] members[i]), on their watchers.
func (t *Transport) watchReadMany(ctx context.Context, keys, members []string, out []conn.WatchReadResult) []conn.WatchReadResult {
	out = slices.Grow(out[:0], len(keys))[:len(keys)]
	clear(out)
	if t.clientClosed.Load() {
		for i := range out {
			out[i].Err = &conn.Error{Class: conn.NotSubmitted, Op: "watch", Err: errClientClosed}
		}
		return out
	}
	nodes := make([]string, len(keys))
	pending := make([]int, 0, len(keys))
	for i, k := range keys {
		node, err := t.route(ctx, "watch", k)
		if err == nil && node == "" { // Sentinel before any connection named the master
			var s *session
			if s, err = t.sessionFor(ctx, ""); err == nil {
				node = s.node
			}
		}
		if err != nil {
			out[i].Err = err
			continue
		}
		nodes[i] = node
		pending = append(pending, i)
	}
	for hop := 0; hop <= maxRedirects && len(pending) > 0; hop++ {
		pending = t.readGroups(ctx, keys, members, nodes, pending, out)
	}
	for _, i := range pending {
		out[i].Err = &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: nodes[i], Err: errTooManyRedirects}
	}
	return out
}

var errTooManyRedirects = errors.New("too many redirects")

// readGroups reads the pending keys, grouped by node, each group on its
// own goroutine but the first; it returns the keys redirected (nodes
// updated).
func (t *Transport) readGroups(ctx context.Context, keys, members, nodes []string, pending []int, out []conn.WatchReadResult) []int {
	var groups [][]int
	for _, i := range pending {
		g := slices.IndexFunc(groups, func(g []int) bool { return nodes[g[0]] == nodes[i] })
		if g < 0 {
			groups = append(groups, nil)
			g = len(groups) - 1
		}
		groups[g] = append(groups[g], i)
	}
	moved := make([][]int, len(groups))
	var wg sync.WaitGroup
	for g := 1; g < len(groups); g++ {
		wg.Go(func() { moved[g] = t.readGroup(ctx, keys, members, nodes, groups[g], out) })
	}
	moved[0] = t.readGroup(ctx, keys, members, nodes, groups[0], out)
	wg.Wait()
	return slices.Concat(moved...)
}

// readGroup tracks and reads one node's keys in one round trip.
func (t *Transport) readGroup(ctx context.Context, keys, members, nodes []string, idx []int, out []conn.WatchReadResult) []int {
	node := nodes[idx[0]]
	w, err := t.watcherFor(ctx, node)
	if err != nil {
		for _, i := range idx {
			out[i] = conn.WatchReadResult{Node: node, Err: err}
		}
		return nil
	}
	cmds := make([]conn.Command, 0, 2*len(idx))
	for _, i := range idx {
		read := conn.OwnerCommand(keys[i])
		if members != nil {
			read = conn.ScoreCommand(keys[i], members[i])
		}
		cmds = append(cmds, conn.CachingYesCommand(), read)
	}
	t.report(ctx, cmds...)
	results, err := w.trip(ctx, cmds)
	var redirected []int
	for n, i := range idx {
		var again bool
		if err != nil {
			out[i] = conn.WatchReadResult{Node: node, Err: &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: node, Err: err}}
			continue
		}
		out[i], again = t.settleRead(w, results[2*n], results[2*n+1], &nodes[i], members != nil)
		if again {
			redirected = append(redirected, i)
		}
	}
	return redirected
}

// settleRead turns one key's replies into its result, or reports a
// redirect (node set to the node named).
func (t *Transport) settleRead(w *watcher, caching, get result, node *string, score bool) (conn.WatchReadResult, bool) {
	r := conn.WatchReadResult{Node: w.node}
	for _, res := range [2]result{caching, get} {
		if res.transport != nil {
			t.retireWatcher(w)
			r.Err = &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: w.node, Err: res.transport}
			return r, false
		}
	}
	if caching.reply.Kind == conn.ReplyError {
		t.retireWatcher(w)
		r.Err = t.refuseOrFail(w, caching.server)
		return r, false
	}
	if rd, ok := conn.ParseRedirect(get.reply.Text); ok && get.reply.Kind == conn.ReplyError {
		*node = rd.Addr
		if !rd.Ask {
			t.reload(context.Background())
			t.slotMoved(w.node)
		}
		return r, true
	}
	token, found, serverErr := conn.WatchedResult(get.reply, score)
	if serverErr != nil {
		r.Err = definite("watch", nil, get)
		r.Err.(*conn.Error).Addr = w.node
		return r, false
	}
	r.Token, r.Found = token, found
	return r, false
}
