package conn

import (
	"context"
	"slices"
	"time"
)

// watchReadBound bounds a watcher's read whose ctx has no deadline.
const watchReadBound = 5 * time.Second

// WatchReadMany implements Transport: it tracks each key on the watcher of
// its primary and reads it there (GET), sending per node ONE pipeline of
// CLIENT CACHING YES + GET per key. It returns out[:0] grown to one result
// per key, in keys' order: the node, the owner token and whether the key
// exists, or the error (a transport error is NotSubmitted and drops the
// watcher unless ctx ended; a CACHING error reply is ErrTrackingRefused,
// remembered for the node; a server error is Definite). A key answered with
// MOVED is sent again to its new owner. The nodes' round trips run
// concurrently. It blocks until every key has its result.
func (e *Engine) WatchReadMany(ctx context.Context, keys []string, out []WatchReadResult) []WatchReadResult {
	return e.watchReadMany(ctx, keys, nil, out)
}

// WatchScoreMany implements Transport: WatchReadMany for sorted-set
// members (CLIENT CACHING YES + ZSCORE Key Member); Found reports whether
// Member is in the set.
func (e *Engine) WatchScoreMany(ctx context.Context, reads []MemberRead, out []WatchReadResult) []WatchReadResult {
	keys, members := make([]string, len(reads)), make([]string, len(reads))
	for i, r := range reads {
		keys[i], members[i] = r.Key, r.Member
	}
	return e.watchReadMany(ctx, keys, members, out)
}

// watchReadMany reads keys (GET), or with members the members of keys
// (ZSCORE keys[i] members[i]), on their watchers.
func (e *Engine) watchReadMany(ctx context.Context, keys, members []string, out []WatchReadResult) []WatchReadResult {
	out = slices.Grow(out[:0], len(keys))[:len(keys)]
	clear(out)
	if err := e.clientClosed(); err != nil {
		for i := range out {
			out[i].Err = &Error{Class: NotSubmitted, Op: "watch", Err: err}
		}
		return out
	}
	ctx, cancel := e.own(ctx, watchReadBound)
	defer cancel()
	pending := make([]int, len(keys))
	for i := range pending {
		pending[i] = i
	}
	for hop := 0; hop <= maxRedirects && len(pending) > 0; hop++ {
		groups := e.routeWatchReads(ctx, keys, pending, out)
		pending = e.readWatchGroups(ctx, keys, members, groups, out, pending[:0])
	}
	for _, i := range pending {
		out[i].Err = &Error{Class: NotSubmitted, Op: "watch", Addr: out[i].Node, Err: errTooManyRedirects}
	}
	return out
}

// routeWatchReads groups the pending keys by the node they route to; a key
// that cannot be routed gets the error as its result.
func (e *Engine) routeWatchReads(ctx context.Context, keys []string, pending []int, out []WatchReadResult) []watchGroup {
	var groups []watchGroup
	var node string
	var err error
	for n, i := range pending {
		if n == 0 || e.mode == ModeCluster {
			node, err = e.route(ctx, "GET", keys[i])
		}
		if err != nil {
			out[i] = WatchReadResult{Err: err}
			continue
		}
		g := slices.IndexFunc(groups, func(g watchGroup) bool { return g.node == node })
		if g < 0 {
			g = len(groups)
			groups = append(groups, watchGroup{node: node})
		}
		groups[g].idx = append(groups[g].idx, i)
	}
	return groups
}

// readWatchGroups reads every group on its node's watcher, the first on
// the calling task and the others each on a task of its own, and returns
// redirected with the indexes of the keys to send again appended.
func (e *Engine) readWatchGroups(ctx context.Context, keys, members []string, groups []watchGroup, out []WatchReadResult,
	redirected []int) []int {
	if len(groups) == 1 {
		return e.readWatchGroup(ctx, keys, members, groups[0], out, redirected)
	}
	moved := make([][]int, len(groups))
	done := make([]chan struct{}, len(groups))
	for g := 1; g < len(groups); g++ {
		done[g] = make(chan struct{})
		e.spawn.Go(func() {
			defer close(done[g])
			moved[g] = e.readWatchGroup(ctx, keys, members, groups[g], out, nil)
		})
	}
	if len(groups) > 0 {
		moved[0] = e.readWatchGroup(ctx, keys, members, groups[0], out, nil)
	}
	for g := 1; g < len(groups); g++ {
		_ = e.spawn.Wait(context.Background(), done[g])
	}
	for _, m := range moved {
		redirected = append(redirected, m...)
	}
	return redirected
}

// readWatchGroup tracks and reads g's keys on the watcher of g.node in one
// pipeline, writes their results and returns redirected with the indexes
// of the keys answered with a redirect appended.
func (e *Engine) readWatchGroup(ctx context.Context, keys, members []string, g watchGroup, out []WatchReadResult,
	redirected []int) []int {
	if e.mode == ModeSentinel {
		e.dropStaleWatchers(g.node)
	}
	w, err := e.watcherFor(ctx, g.node)
	if err != nil {
		for _, i := range g.idx {
			out[i] = WatchReadResult{Node: g.node, Err: err}
		}
		return redirected
	}
	cmds := make([]Command, 0, 2*len(g.idx))
	for _, i := range g.idx {
		read := OwnerCommand(keys[i])
		if members != nil {
			read = ScoreCommand(keys[i], members[i])
		}
		cmds = append(cmds, CachingYesCommand(), read)
	}
	replies := make([]Reply, len(cmds))
	err = w.reader.exchange(ctx, "watch", cmds, replies, nil, nil)
	if err != nil && !cancelledByCaller(ctx, err) {
		e.retireWatcher(w) // the socket failed: what it tracked is forgotten (told once)
	}
	for n, i := range g.idx {
		var again bool
		out[i], again = e.settleWatchRead(w, replies[2*n], replies[2*n+1], members != nil, err)
		if again {
			redirected = append(redirected, i)
		}
	}
	return redirected
}

// settleWatchRead turns one key's replies on w (to CLIENT CACHING YES and
// to its read) into its result, or reports that the key was redirected
// (again: send it once more; MOVED taught the slot map its new owner).
func (e *Engine) settleWatchRead(w *pushWatcher, caching, read Reply, score bool, err error) (r WatchReadResult, again bool) {
	r.Node = w.node
	if caching.Kind == 0 || read.Kind == 0 {
		if err == nil {
			err = errNoReply
		}
		r.Err = &Error{Class: NotSubmitted, Op: "watch", Addr: w.node, Err: err}
		return r, false
	}
	if caching.Kind == ReplyError {
		r.Err = e.refuse(w, caching.Text)
		return r, false
	}
	if rd, ok := ParseRedirect(read.Text); ok && read.Kind == ReplyError {
		if !rd.Ask {
			e.learnSlot(rd.Slot, rd.Addr)
		}
		return r, true
	}
	token, found, serverErr := WatchedResult(read, score)
	if serverErr != nil {
		r.Err = definiteError("watch", w.node, nil, serverErr, read.Err)
		return r, false
	}
	r.Token, r.Found = token, found
	return r, false
}
