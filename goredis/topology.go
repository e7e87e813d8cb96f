package goredis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// clusterNodes reloads go-redis' slot map and returns the addresses of its
// masters (every node when masters is false), recording their clients.
func (c *client) clusterNodes(ctx context.Context, masters bool) ([]string, error) {
	each := c.cluster.ForEachShard
	if masters {
		each = c.cluster.ForEachMaster
	}
	var mu sync.Mutex
	var addrs []string
	err := each(ctx, func(_ context.Context, nc *redis.Client) error {
		addr := nc.Options().Addr
		mu.Lock()
		addrs = append(addrs, addr)
		mu.Unlock()
		c.mu.Lock()
		c.nodes[addr] = nc
		c.mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(addrs)
	return addrs, nil
}

// nodeClient returns the cluster node client of node: one go-redis knows
// (its slot map is reloaded once when node is not among them), or an error
// matching conn.ErrUnknownNode.
func (c *client) nodeClient(ctx context.Context, node string) (*redis.Client, error) {
	c.mu.Lock()
	nc := c.nodes[node]
	c.mu.Unlock()
	if nc != nil {
		return nc, nil
	}
	if _, err := c.clusterNodes(ctx, false); err != nil {
		return nil, err
	}
	c.mu.Lock()
	nc = c.nodes[node]
	c.mu.Unlock()
	if nc == nil {
		return nil, fmt.Errorf("%w: %s is not in go-redis' slot map", conn.ErrUnknownNode, node)
	}
	return nc, nil
}

// nodeOptions returns the options of the client that reaches node.
func (c *client) nodeOptions(ctx context.Context, node string) (*redis.Options, error) {
	switch c.mode {
	case conn.ModeStandalone:
		if node != c.addr {
			return nil, fmt.Errorf("%w: %s (the client's is %s)", conn.ErrUnknownNode, node, c.addr)
		}
	case conn.ModeCluster:
		nc, err := c.nodeClient(ctx, node)
		if err != nil {
			return nil, err
		}
		return nc.Options(), nil
	}
	return c.single.Options(), nil
}

// forgetNode drops a cluster node's client after a round trip on it failed
// (go-redis closes the clients of nodes it dropped from its slot map): the
// next Dial looks it up again.
func (c *client) forgetNode(node string) {
	c.mu.Lock()
	delete(c.nodes, node)
	c.mu.Unlock()
}

// learnPrimary asks which master the Sentinel client reaches now: CLIENT
// INFO's laddr= on a new Conn of it (closed after).
func (c *client) learnPrimary(ctx context.Context) (string, error) {
	c.learnMu.Lock()
	defer c.learnMu.Unlock()
	c.mu.Lock()
	p, stale := c.primary, c.stale
	c.mu.Unlock()
	if p != "" && !stale {
		return p, nil // learnt meanwhile
	}
	g := newConn(c, "", c.single.EphemeralConn())
	defer g.Close()
	p, err := g.laddr(ctx)
	if err != nil {
		return "", err
	}
	c.notePrimary(p)
	return p, nil
}

// dialPrimary returns a Conn of the Sentinel client if it reaches node,
// which its CLIENT INFO's laddr= names; otherwise the master it reached is
// noted and the Dial fails with conn.ErrUnknownNode.
func (c *client) dialPrimary(ctx context.Context, node string) (conn.Conn, error) {
	g := newConn(c, node, c.single.EphemeralConn())
	laddr, err := g.laddr(ctx)
	if err != nil {
		g.Close()
		return nil, err
	}
	c.notePrimary(laddr)
	if laddr != node {
		g.Close()
		return nil, fmt.Errorf("%w: %s is no longer the master the Sentinel client reaches (%s is)", conn.ErrUnknownNode, node, laddr)
	}
	return g, nil
}

// notePrimary records that a Conn of the Sentinel client reached node.
func (c *client) notePrimary(node string) {
	c.mu.Lock()
	c.primary, c.stale = node, false
	c.mu.Unlock()
}

// errNoLaddr: the server's CLIENT INFO has no laddr= (Redis < 6.2).
var errNoLaddr = errors.New("CLIENT INFO did not name the node (laddr=): behind Sentinel the adapter needs Redis 6.2 or later")

// laddr returns the node g reached: its CLIENT INFO's laddr=.
func (g *gconn) laddr(ctx context.Context) (string, error) {
	var r [1]conn.Reply
	if err := g.Do(ctx, []conn.Command{conn.ClientInfoCommand()}, r[:]); err != nil {
		return "", err
	}
	if r[0].Kind == conn.ReplyError {
		return "", fmt.Errorf("CLIENT INFO: %s", r[0].Text)
	}
	laddr := infoFields(r[0].Text, "laddr")[0]
	if laddr == "" {
		return "", errNoLaddr
	}
	return laddr, nil
}
