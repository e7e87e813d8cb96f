package valkeygo

import (
	"context"

	"github.com/valkey-io/valkey-go"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/closedprobe"
)

// Closed implements conn.Client. valkey-go leaves dedicated clients working
// after its Close and has no call that tells a closed client without a
// command. But its Close replaces the node's connections with a dead one,
// which answers at once and first of all — before it looks at the ctx — a
// Receive: with ErrClosing, or with the error its node's last failed dial
// or handshake left there. An open client's connection checks the ctx
// before sending the SUBSCRIBE. So Closed probes with a Receive whose ctx
// is already cancelled, which sends nothing either way, at most every
// closedprobe.Gap, on a goroutine of its own (see closedprobe.Prober.Closed
// for what the answers mean and how long a call waits). A close that
// races the client's redial of the probed connection leaves it open in
// valkey-go, and the client then reads as open. When that connection is not
// up (never used, or broken and not redialled yet), the probe makes
// valkey-go dial it with the cancelled ctx, which fails at once without
// sending anything; a command of the user's that asks for that connection
// in the same instant shares the failed dial (valkey-go retries it when the
// command is retryable), and the user's next command dials afresh.
func (c *Client) Closed() error { return c.closed.Closed() }

// newProber returns the Prober of c's client.
func (c *Client) newProber() *closedprobe.Prober {
	return closedprobe.New(func() error { return receive(c.probed()) }, valkey.ErrClosing,
		func(err error) bool { _, ok := err.(*valkey.ValkeyError); return ok })
}

// probed is the client the probes go through: the user's, or in a
// cluster the node client of the smallest address (the cluster client
// would route a sharded SUBSCRIBE by its channel's slot, and a slot it has
// no node for makes it read the cluster's topology on every probe),
// looked up afresh for each probe: a cluster client's Close closes its
// node clients, and a node client it dropped in a topology change, closed
// seconds later, is no longer among its nodes by then.
func (c *Client) probed() valkey.Client {
	if c.mode != conn.ModeCluster {
		return c.client
	}
	nodes := c.client.Nodes()
	first := ""
	for addr := range nodes {
		if first == "" || addr < first {
			first = addr
		}
	}
	if first == "" {
		return c.client
	}
	return nodes[first]
}

// receive is one probe: a Receive of a SUBSCRIBE whose ctx is cancelled,
// which sends nothing. valkey-go takes a SUBSCRIBE's connection to a node
// always from the node's first pipeline connection (the one it dialled
// when it learned the node).
func receive(client valkey.Client) error {
	return client.Receive(cancelled, client.B().Subscribe().Channel(probeChannel).Build(), func(valkey.PubSubMessage) {})
}

// probeChannel is the probes' channel.
const probeChannel = "respire-go:closed-probe"

// cancelled is the probes' ctx.
var cancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
