package dst

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/respire-go/respire/conn"
)

// This file is the simulated client library: a conn.Client whose Dial
// opens a simulated connection (simconn.go) to a node over the seeded
// network and whose Listen opens one that receives the node's
// invalidations, the two ways a real client can (Options.ListenRedirect).
// It knows the topology a client knows — the node, or in cluster mode the
// nodes to ask CLUSTER SLOTS — and nothing of locks: the engine above it
// is the one that ships.

// simClient is process p's client library.
type simClient struct {
	w      *world
	p      *process
	closed error // the user closed the client (nil while usable)
}

// errClientClosed is what the simulated client says once closed.
var errClientClosed = errors.New("dst: client closed")

// Name implements conn.Client.
func (c *simClient) Name() string { return "dst" }

// Mode implements conn.Client: cluster when the schedule may move a slot
// (the engine then routes by the slot map it learns), else standalone.
func (c *simClient) Mode() conn.Mode {
	if c.w.opt.MoveSlotPercent > 0 {
		return conn.ModeCluster
	}
	return conn.ModeStandalone
}

// Nodes implements conn.Client: the first node in standalone mode (a
// failover keeps its address); every node in cluster mode, where the
// engine asks them for the slot map.
func (c *simClient) Nodes(context.Context) ([]string, error) {
	if c.Mode() != conn.ModeCluster {
		return []string{c.w.nodes[0].addr}, nil
	}
	addrs := make([]string, len(c.w.nodes))
	for i, n := range c.w.nodes {
		addrs[i] = n.addr
	}
	return addrs, nil
}

// Closed implements conn.Client.
func (c *simClient) Closed() error { return c.closed }

// Dial implements conn.Client: a new connection to node, ready once its
// handshake (HELLO 3, one round trip) is answered. It blocks until then or
// until ctx ends (a paused node answers late); an address no node has is
// ErrUnknownNode.
func (c *simClient) Dial(ctx context.Context, node string) (conn.Conn, error) {
	s, err := c.dial(ctx, node, "conn", true)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// dial connects to node and runs the client's handshake: HELLO 3 for a
// RESP3 connection, SUBSCRIBE __redis__:invalidate for a RESP2 listener.
func (c *simClient) dial(ctx context.Context, node, role string, resp3 bool) (*simConn, error) {
	w := c.w
	if c.closed != nil {
		return nil, c.closed
	}
	n := w.nodeByAddr(node)
	if n == nil {
		return nil, fmt.Errorf("dial %s: %w", node, conn.ErrUnknownNode)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dial %s: %w", node, context.Cause(ctx))
	}
	s := &simConn{w: w, p: c.p, c: w.open(c.p, n, role), pipelined: !w.opt.Unpipelined || role != "conn"}
	s.c.sc = s
	hello := conn.Command{Args: []string{"HELLO", "3"}, Key: -1}
	if !resp3 {
		hello = conn.Command{Args: []string{"SUBSCRIBE", "__redis__:invalidate"}, Key: -1}
	}
	x := s.write(ctx, []conn.Command{hello})
	err := c.p.spawn.Wait(ctx, x.done)
	switch {
	case err != nil:
		x.over = true
	case x.lost != nil:
		err = x.lost
	case x.replies[0].Kind == conn.ReplyError:
		err = errors.New(x.replies[0].Text)
	}
	if err != nil {
		s.closed = true
		w.retireConn(s.c)
		return nil, fmt.Errorf("dial %s: %w", node, err)
	}
	return s, nil
}

// Listen implements conn.Client. By default the listener is a RESP3
// connection that carries commands too (Conn non-nil: rueidis,
// valkey-go); with Options.ListenRedirect it only listens, subscribed to
// __redis__:invalidate (Conn nil, ID its CLIENT ID: go-redis), and the
// engine redirects tracking to it. fn is called, on the scheduler's own
// code, with each invalidation's keys, and with nil for a flush or once
// the connection ended.
func (c *simClient) Listen(ctx context.Context, node string, fn func(keys []string)) (conn.Listener, error) {
	s, err := c.dial(ctx, node, "listen", !c.w.opt.ListenRedirect)
	if err != nil {
		return nil, err
	}
	l := &simListener{s: s, fn: fn, redirect: c.w.opt.ListenRedirect}
	s.c.listener = l
	return l, nil
}

// simListener is a connection that receives invalidations.
type simListener struct {
	s        *simConn
	fn       func(keys []string)
	redirect bool // listen-only: the engine tracks on a connection of its own with REDIRECT
	closed   bool // Close was called: fn is not called any more
	ended    bool // fn(nil) was called for the connection's end
}

// Conn implements conn.Listener.
func (l *simListener) Conn() conn.Conn {
	if l.redirect {
		return nil
	}
	return l.s
}

// ID implements conn.Listener.
func (l *simListener) ID() int64 {
	if l.redirect {
		return l.s.c.clientID
	}
	return 0
}

// Close implements conn.Listener.
func (l *simListener) Close() {
	l.closed = true
	l.s.Close()
}

// pushed hands one invalidation to fn (keys nil with flush).
func (l *simListener) pushed(w *world, keys []string, flush bool) {
	if l.closed || l.ended {
		return
	}
	if flush {
		l.fn(nil)
		return
	}
	w.stats.Pushes++
	w.trace.logf(w, l.s.p, "", "push from %s: invalidate %s", l.s.c.node.name, strings.Join(keys, " "))
	l.fn(keys)
}

// connectionEnded tells fn, once, that everything tracked on the
// listener may be forgotten.
func (l *simListener) connectionEnded() {
	if l.closed || l.ended {
		return
	}
	l.ended = true
	l.fn(nil)
}
