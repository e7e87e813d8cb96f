//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// errUnknownNode: the client has no connection to the node (a redirect
// named a node go-redis does not know yet, or a Sentinel primary moved).
var errUnknownNode = errors.New("node is not known to the client")

// SessionForKey implements conn.Transport: the current session of the
// primary that owns key, opened (identity learned) when needed. Failures
// are NotSubmitted. In Sentinel mode the node is the client's master,
// learned from the session's own CLIENT INFO.
func (t *Transport) SessionForKey(ctx context.Context, key string) (conn.Session, error) {
	node, err := t.route(ctx, "open", key)
	if err != nil {
		return nil, err
	}
	return t.sessionFor(ctx, node)
}

// SessionFor implements conn.Transport: the current session to node,
// opening one when needed; concurrent callers share one open.
func (t *Transport) SessionFor(ctx context.Context, node string) (conn.Session, error) {
	s, err := t.sessionFor(ctx, node)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// route returns the node key belongs to: "" in Sentinel mode while no
// connection has named the master yet (the open names it).
func (t *Transport) route(ctx context.Context, op, key string) (string, error) {
	switch t.mode {
	case modeStandalone:
		return t.addr, nil
	case modeSentinel:
		if p := t.primary.Load(); p != nil {
			return *p, nil
		}
		return "", nil
	}
	if err := ctx.Err(); err != nil {
		return "", &conn.Error{Class: conn.NotSubmitted, Op: op, Err: err}
	}
	nc, err := t.cluster.MasterForKey(ctx, key)
	if err != nil {
		return "", &conn.Error{Class: conn.NotSubmitted, Op: op, Err: err}
	}
	addr := nc.Options().Addr
	t.mu.Lock()
	t.nodes[addr] = nc
	t.mu.Unlock()
	return addr, nil
}

// nodeClient returns the go-redis client that reaches node: the client
// itself outside cluster mode, a cluster node client otherwise (a node not
// seen yet is looked up among the masters, which reloads go-redis' slot
// map).
func (t *Transport) nodeClient(ctx context.Context, node string) (*redis.Client, error) {
	if t.mode != modeCluster {
		return t.single, nil
	}
	t.mu.Lock()
	nc := t.nodes[node]
	t.mu.Unlock()
	if nc != nil {
		return nc, nil
	}
	_ = t.cluster.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		addr := c.Options().Addr
		t.mu.Lock()
		t.nodes[addr] = c
		t.mu.Unlock()
		return nil
	})
	t.mu.Lock()
	nc = t.nodes[node]
	t.mu.Unlock()
	if nc == nil {
		return nil, fmt.Errorf("%w: %s", errUnknownNode, node)
	}
	return nc, nil
}

// sessionFor returns node's current session, opening one (once at a time
// per node) when there is none or it was retired.
func (t *Transport) sessionFor(ctx context.Context, node string) (*session, error) {
	for {
		if s, err := t.current(node); s != nil || err != nil {
			return s, err
		}
		opened := t.opening.DoChan(node, func() (any, error) { return t.openCurrent(ctx, node) })
		select {
		case r := <-opened:
			if r.Err == nil {
				return r.Val.(*session), nil
			}
			if ctx.Err() == nil && (errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, context.DeadlineExceeded)) {
				continue // the caller that led the open gave up; ours is live
			}
			return nil, r.Err
		case <-ctx.Done():
			return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: node, Err: context.Cause(ctx)}
		}
	}
}

// current returns node's live current session, nil if none, or the
// closed error. In Sentinel mode node "" means the master.
func (t *Transport) current(node string) (*session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: node, Err: conn.ErrPoolClosed}
	}
	if s := t.sessions[node]; s != nil && !s.Retired() {
		return s, nil
	}
	return nil, nil
}

// openCurrent opens a session to node and makes it node's current one.
// In Sentinel mode the session names its node itself: one asked for node
// that reached another is retired (the master moved) and errUnknownNode
// returned, NotSubmitted.
func (t *Transport) openCurrent(ctx context.Context, node string) (*session, error) {
	if s, err := t.current(node); s != nil || err != nil {
		return s, err
	}
	s, err := t.openSession(ctx, node)
	if err != nil {
		return nil, err
	}
	if t.mode == modeSentinel && node != "" && s.node != node {
		t.retireFor(s, conn.RetiredDemoted)
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: node,
			Err: fmt.Errorf("%w: %s (the master is %s now)", errUnknownNode, node, s.node)}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		go s.retire(conn.RetiredClosed)
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: node, Err: conn.ErrPoolClosed}
	}
	if cur := t.sessions[s.node]; cur == nil || cur.Retired() {
		t.sessions[s.node] = s
	}
	if node == "" {
		t.sessions[""] = s // the Sentinel master before it was named
	}
	return s, nil
}

// retireFor retires s and forgets it as its node's current session.
func (t *Transport) retireFor(s *session, reason conn.RetireReason) {
	t.unlist(s)
	s.retire(reason)
}

// unlist forgets s as its node's current session and as open.
func (t *Transport) unlist(s *session) {
	t.mu.Lock()
	for node, cur := range t.sessionsOf(s) {
		if cur == s {
			delete(t.sessions, node)
		}
	}
	delete(t.open, s)
	t.mu.Unlock()
}

// sessionsOf returns the entries of t.sessions that may hold s (its node,
// and "" in Sentinel mode); t.mu is held.
func (t *Transport) sessionsOf(s *session) map[string]*session {
	out := map[string]*session{s.node: t.sessions[s.node]}
	if t.mode == modeSentinel {
		out[""] = t.sessions[""]
	}
	return out
}

// reload makes go-redis read the cluster's slot map again (lazily) after
// a redirect or a reply that says the cluster cannot serve the slot now.
func (t *Transport) reload(ctx context.Context) {
	if t.mode == modeCluster {
		t.cluster.ReloadState(ctx)
	}
}
