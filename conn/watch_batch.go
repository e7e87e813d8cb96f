package conn

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/redis/rueidis"
)

// This file reads many keys on their watchers at once: the keys are grouped
// by node and each node's group goes in one round trip (one DoMulti of
// CLIENT CACHING YES + GET per key on that node's watcher). WatchRead is
// the one-key case.

// WatchReadResult is one key's outcome of WatchReadMany, as WatchRead
// returns it: the node asked (empty when the key could not be routed), the
// owner token and whether the key exists, or the error.
type WatchReadResult struct {
	Node  string
	Token string
	Found bool
	Err   error
}

// errTooManyRedirects ends a watcher read whose key kept being redirected.
var errTooManyRedirects = errors.New("too many redirects")

// watchGroup is the keys of one WatchReadMany hop that go to one node: their
// indexes into the keys and results.
type watchGroup struct {
	node string
	idx  []int
}

// WatchReadMany is WatchRead for many keys: it tracks each key on the
// watcher of its primary and reads it there, sending per node ONE round trip
// (a DoMulti of CLIENT CACHING YES + GET for each of its keys: OPTIN tracks
// only the read right after a CACHING YES). It returns out[:0] grown to one
// result per key, in keys' order; each has exactly the meaning of
// WatchRead's return values (a transport error is NotSubmitted and drops the
// watcher unless ctx ended; a CACHING error reply is ErrTrackingRefused,
// remembered for the node; a server error is Definite), judged per key. A
// key answered with MOVED is sent again, with the other redirected keys, to
// its new owner (the slot map learns it). The nodes' round trips run
// concurrently (one goroutine per node beyond the first), so a batch takes
// about its slowest node's round trip, not their sum. It blocks until every
// key has its result; the first read per node also waits for the watcher's
// handshake.
func (p *Pool) WatchReadMany(ctx context.Context, keys []string, out []WatchReadResult) []WatchReadResult {
	return p.watchReadMany(ctx, keys, nil, out)
}

// MemberRead is one sorted-set member WatchScoreMany tracks and reads.
type MemberRead struct {
	Key    string // the sorted set (a semaphore's holders, a lock's readers)
	Member string // the member: a holder's owner token
}

// WatchScoreMany is WatchReadMany for sorted-set members: per read CLIENT
// CACHING YES + ZSCORE Key Member on the watcher of Key's primary, so that
// the next change of Key (any member's, its expiry, its deletion) sends one
// invalidation. Each result's Found reports whether Member is in the set
// (whatever its score); Token is empty. Everything else is as for
// WatchReadMany: one round trip per node, MOVED followed, results in
// reads' order in out[:0] grown. It blocks until every read has its result.
func (p *Pool) WatchScoreMany(ctx context.Context, reads []MemberRead, out []WatchReadResult) []WatchReadResult {
	keys, members := make([]string, len(reads)), make([]string, len(reads))
	for i, r := range reads {
		keys[i], members[i] = r.Key, r.Member
	}
	return p.watchReadMany(ctx, keys, members, out)
}

// watchReadMany reads keys (GET), or with members the members of keys
// (ZSCORE keys[i] members[i]), on their watchers.
func (p *Pool) watchReadMany(ctx context.Context, keys, members []string, out []WatchReadResult) []WatchReadResult {
	out = slices.Grow(out[:0], len(keys))[:len(keys)]
	clear(out)
	if p.clientClosed.Load() { // the rueidis client was found closed: nothing more is sent
		for i := range out {
			out[i].Err = &Error{Class: NotSubmitted, Op: "watch", Err: ErrClientClosed}
		}
		return out
	}
	pending := make([]int, len(keys))
	for i := range pending {
		pending[i] = i
	}
	for hop := 0; hop <= maxRedirects && len(pending) > 0; hop++ {
		groups := p.routeWatchReads(ctx, keys, pending, out)
		pending = p.readWatchGroups(ctx, keys, members, groups, out, pending[:0])
	}
	for _, i := range pending {
		out[i].Err = &Error{Class: NotSubmitted, Op: "watch", Addr: out[i].Node, Err: errTooManyRedirects}
	}
	return out
}

// routeWatchReads groups the pending keys by the node they route to (once
// for all of them outside cluster mode, where every key has the one
// primary); a key that cannot be routed gets the error as its result.
func (p *Pool) routeWatchReads(ctx context.Context, keys []string, pending []int, out []WatchReadResult) []watchGroup {
	var groups []watchGroup
	var node string
	var err error
	for n, i := range pending {
		if n == 0 || p.cluster {
			node, err = p.route(ctx, "GET", keys[i])
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

// readWatchGroups reads every group on its node's watcher, the first one on
// the calling goroutine and the others each on its own, and returns
// redirected with the indexes of the keys to send again appended.
func (p *Pool) readWatchGroups(ctx context.Context, keys, members []string, groups []watchGroup, out []WatchReadResult,
	redirected []int) []int {
	if len(groups) == 1 {
		return p.readWatchGroup(ctx, keys, members, groups[0], out, redirected)
	}
	moved := make([][]int, len(groups))
	var wg sync.WaitGroup
	for g := 1; g < len(groups); g++ {
		wg.Go(func() { moved[g] = p.readWatchGroup(ctx, keys, members, groups[g], out, nil) })
	}
	if len(groups) > 0 {
		moved[0] = p.readWatchGroup(ctx, keys, members, groups[0], out, nil)
	}
	wg.Wait()
	for _, m := range moved {
		redirected = append(redirected, m...)
	}
	return redirected
}

// readWatchGroup tracks and reads g's keys on the watcher of g.node in one
// round trip, writes their results and returns redirected with the indexes
// of the keys answered with a redirect appended.
func (p *Pool) readWatchGroup(ctx context.Context, keys, members []string, g watchGroup, out []WatchReadResult,
	redirected []int) []int {
	if p.sentinel {
		p.dropStaleWatchers(g.node)
	}
	w, err := p.watcherFor(ctx, g.node)
	if err != nil {
		for _, i := range g.idx {
			out[i] = WatchReadResult{Node: g.node, Err: err}
		}
		return redirected
	}
	b := w.client.B()
	cmds := make(rueidis.Commands, 0, 2*len(g.idx))
	for _, i := range g.idx {
		read := OwnerCommand(keys[i])
		if members != nil {
			read = ScoreCommand(keys[i], members[i])
		}
		p.reportCommand(ctx, "CLIENT CACHING")
		p.reportCommand(ctx, read.Args[0])
		cmds = append(cmds, buildCommand(b, CachingYesCommand()), buildCommand(b, read))
	}
	results := w.client.DoMulti(ctx, cmds...)
	for n, i := range g.idx {
		var again bool
		out[i], again = p.settleWatchRead(ctx, w, results[2*n], results[2*n+1], members != nil)
		if again {
			redirected = append(redirected, i)
		}
	}
	return redirected
}

// settleWatchRead turns one key's replies on w (to CLIENT CACHING YES and to
// its GET) into its result, or reports that the key was redirected (again:
// send it once more; MOVED taught the slot map its new owner).
func (p *Pool) settleWatchRead(ctx context.Context, w *watcher, caching, get rueidis.RedisResult, score bool) (
	r WatchReadResult, again bool) {
	r.Node = w.node
	for _, res := range [2]rueidis.RedisResult{caching, get} {
		if e := res.NonRedisError(); e != nil {
			if !cancelledByCaller(ctx, e) {
				p.retireWatcher(w) // the socket failed: what it tracked is forgotten (told once)
			}
			r.Err = &Error{Class: NotSubmitted, Op: "watch", Addr: w.node, Err: e}
			return r, false
		}
	}
	if reply, _ := toReply(caching); reply.Kind == ReplyError {
		r.Err = p.refuse(w, reply.Text)
		return r, false
	}
	reply, redisErr := toReply(get)
	if rd, ok := ParseRedirect(reply.Text); ok && reply.Kind == ReplyError {
		if !rd.Ask {
			p.learnSlot(rd.Slot, rd.Addr)
		}
		return r, true
	}
	token, found, serverErr := WatchedResult(reply, score)
	if serverErr != nil {
		r.Err = definite("watch", w.node, nil, serverErr, redisErr)
		return r, false
	}
	r.Token, r.Found = token, found
	return r, false
}
