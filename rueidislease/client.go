package rueidislease

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/closedprobe"
)

// Client is conn.Client over a rueidis.Client: the seam the wire engine
// dials through. Every connection it hands out is a dedicated client of
// the user's client (a socket of its own, with the user's dialer, TLS,
// authentication and RESP3). Create it with NewClient; it is safe for
// concurrent use and never closes the user's client.
type Client struct {
	client rueidis.Client
	mode   conn.Mode
	watch  *sentinelWatch // NewSentinel: every sentinel's announcements; nil otherwise

	closed *closedprobe.Prober // whether the user's client was closed (see Closed)
}

// NewClient wraps client (it sends nothing).
func NewClient(client rueidis.Client) *Client {
	c := &Client{client: client, mode: conn.ModeStandalone}
	switch client.Mode() {
	case rueidis.ClientModeCluster:
		c.mode = conn.ModeCluster
	case rueidis.ClientModeSentinel:
		c.mode = conn.ModeSentinel
	}
	c.closed = c.newProber()
	return c
}

// Name implements conn.Client.
func (c *Client) Name() string { return "rueidis" }

// Mode implements conn.Client.
func (c *Client) Mode() conn.Mode { return c.mode }

// Nodes implements conn.Client: the addresses of rueidis' node clients (a
// Sentinel client's one node is the master it follows; under NewSentinel,
// the primary a sentinel announced last, once one has). It never blocks.
func (c *Client) Nodes(context.Context) ([]string, error) {
	if c.watch != nil {
		if primary := c.watch.named(); primary != "" {
			return []string{primary}, nil
		}
	}
	nodes := c.client.Nodes()
	out := make([]string, 0, len(nodes))
	for addr := range nodes {
		out = append(out, addr)
	}
	slices.Sort(out)
	return out, nil
}

// Dial implements conn.Client: a dedicated client of node's rueidis node
// client. A cluster node rueidis has not discovered yet (added after it
// read the topology) is learned first (see learnNode); a Sentinel client
// whose master is no longer node answers conn.ErrUnknownNode (under
// NewSentinel, the announced primary is dialed with the user's option while
// rueidis does not know it yet).
func (c *Client) Dial(ctx context.Context, node string) (conn.Conn, error) {
	nc, err := c.nodeClient(ctx, node)
	if err != nil {
		return nil, err
	}
	d, _ := nc.Dedicate()
	return &rconn{d: d}, nil
}

// nodeClient returns rueidis' client of node.
func (c *Client) nodeClient(ctx context.Context, node string) (rueidis.Client, error) {
	if nc, ok := c.client.Nodes()[node]; ok {
		return nc, nil
	}
	if c.mode == conn.ModeCluster {
		c.learnNode(ctx, node)
		if nc, ok := c.client.Nodes()[node]; ok {
			return nc, nil
		}
	}
	if c.watch != nil {
		if nc, err := c.watch.clientOf(node); nc != nil || err != nil {
			return nc, err
		}
	}
	return nil, fmt.Errorf("%w: %s", conn.ErrUnknownNode, node)
}

// learnNode makes the cluster client learn node, which the cluster says
// serves some slot: rueidis learns nodes from MOVED replies to its own
// commands, never from our connections' redirects. So one harmless read
// (GET, which every least-privilege user of a lock may run) of a key of a
// slot node serves goes through the client, which follows the MOVED and
// connects to node. The reply is dropped.
func (c *Client) learnNode(ctx context.Context, node string) {
	slots, err := c.client.Do(ctx, c.client.B().Arbitrary("CLUSTER", "SLOTS").Build()).ToArray()
	if err != nil {
		return
	}
	for _, r := range slots {
		fields, err := r.ToArray()
		if err != nil || len(fields) < 3 {
			continue
		}
		master, err := fields[2].ToArray()
		if err != nil || len(master) < 2 {
			continue
		}
		host, _ := master[0].ToString()
		port, _ := master[1].AsInt64()
		if net.JoinHostPort(host, strconv.FormatInt(port, 10)) == node {
			start, _ := fields[0].AsInt64()
			c.client.Do(ctx, c.client.B().Get().Key(c.keyOf(uint16(start))).Build())
			return
		}
	}
}

// keyOf returns a short key of slot (found by trying hash tags).
func (c *Client) keyOf(slot uint16) string {
	for n := 0; ; n++ {
		key := "{" + strconv.Itoa(n) + "}"
		if cmd := c.client.B().Get().Key(key).Build(); cmd.Slot() == slot {
			return key
		}
	}
}

// Release implements conn.ClientReleaser: the engine's Close ends
// NewSentinel's subscriptions.
func (c *Client) Release() {
	if c.watch != nil {
		c.watch.release()
	}
}

// The adapter is a conn.Client.
var _ conn.Client = (*Client)(nil)
