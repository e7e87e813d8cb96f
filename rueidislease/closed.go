package rueidislease

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/closedprobe"
)

// Closed implements conn.Client: rueidis has no call that tells a closed
// client without a command, so a closedprobe.Prober asks, with a Receive
// whose ctx is already cancelled (package closedprobe says why that sends
// nothing and what the answers mean).
func (c *Client) Closed() error { return c.closed.Closed() }

// newProber returns the Prober of c's client: in a cluster its probes go
// through closedprobe.First's node client.
func (c *Client) newProber() *closedprobe.Prober {
	probe := func() error {
		client := c.client
		if c.mode == conn.ModeCluster {
			if node, ok := closedprobe.First(c.client.Nodes()); ok {
				client = node
			}
		}
		return client.Receive(cancelled, client.B().Subscribe().Channel(probeChannel).Build(), func(rueidis.PubSubMessage) {})
	}
	return closedprobe.New(probe, rueidis.ErrClosing, func(err error) bool { _, ok := err.(*rueidis.RedisError); return ok })
}

// probeChannel is the probes' channel.
const probeChannel = "respire-go:closed-probe"

// cancelled is the probes' ctx.
var cancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
