package rueidislease

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
)

// Closed implements conn.Client. rueidis leaves dedicated clients
// working after its Close and has no call that tells a closed client
// without a command. But its Close replaces the node's connections with
// a dead one, which answers at once and first of all — before it looks at
// the ctx — a Receive: with ErrClosing, or with the error its node's last
// failed dial or handshake left there. An open client's connection checks
// the ctx before sending the SUBSCRIBE. So Closed probes with a Receive
// whose ctx is already cancelled: nothing is sent either way, and two
// probes in a row that fail with such an error — ErrClosing, or the very
// same *net.OpError or *rueidis.RedisError value, which an open client
// never repeats (each of its dials fails afresh) — mean closed, for good.
//
// A probe runs when the last one is older than probeGap, on a goroutine
// of its own (a probe that finds the user's first connection to the node
// being redialled waits for that dial), and every Closed made while it runs
// waits for it at most probeWait: a closed client answers at once, a later
// answer is read by a later call. A call made within probeGap of the
// client's close may still be sent, and so may one made before the probe
// had the CPU to run (in a starved process); every later one is refused. A close that races the
// client's redial of that first connection leaves it open in rueidis,
// and the client then reads as open. When that first connection is not
// up (never used, or broken and not redialled yet), the probe makes
// rueidis dial it with the cancelled ctx, which fails at once without
// sending anything; a command of the user's that asks for that connection
// in the same instant shares the failed dial (rueidis retries it when
// the command is retryable), and the user's next command dials afresh.
func (c *Client) Closed() error {
	if p := c.closedBy.Load(); p != nil {
		return *p
	}
	done := c.inflight.Load()
	if done == nil {
		now, last := time.Since(probeEpoch).Nanoseconds(), c.lastProbe.Load()
		if last != 0 && now-last < int64(probeGap) || !c.lastProbe.CompareAndSwap(last, now) {
			return nil
		}
		ch := make(chan struct{})
		if !c.inflight.CompareAndSwap(nil, &ch) {
			return nil
		}
		go func() {
			defer close(ch)
			defer c.inflight.Store(nil)
			c.probe()
		}()
		done = &ch
	}
	t := time.NewTimer(probeWait)
	defer t.Stop()
	select {
	case <-*done:
		if p := c.closedBy.Load(); p != nil {
			return *p
		}
	case <-t.C:
	}
	return nil
}

// probe sends the two probes of Closed and records a close.
func (c *Client) probe() {
	first := receive(c.probed())
	if !closedAnswer(first) {
		return
	}
	second := receive(c.probed())
	if errors.Is(first, rueidis.ErrClosing) && errors.Is(second, rueidis.ErrClosing) || samePointer(first, second) {
		c.closedBy.CompareAndSwap(nil, &first)
	}
}

// probed is the client the probes go through: the user's, or in a
// cluster the node client of the smallest address (the cluster client
// would route a sharded SUBSCRIBE by its channel's slot, and a slot it has
// no node for makes it read the cluster's topology on every probe),
// looked up afresh for each probe: a cluster client's Close closes its
// node clients, and a node client it dropped in a topology change, closed
// seconds later, is no longer among its nodes by then.
func (c *Client) probed() rueidis.Client {
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
// which sends nothing. rueidis takes a SUBSCRIBE's connection to a node
// always from the node's first pipeline connection (the one it dialled
// when it learned the node).
func receive(client rueidis.Client) error {
	return client.Receive(cancelled, client.B().Subscribe().Channel(probeChannel).Build(), func(rueidis.PubSubMessage) {})
}

// closedAnswer reports whether err is what a closed client may answer (see
// Closed): ErrClosing, a dial error or a handshake's error reply.
func closedAnswer(err error) bool {
	switch err.(type) {
	case *net.OpError, *rueidis.RedisError:
		return true
	}
	return errors.Is(err, rueidis.ErrClosing)
}

// samePointer reports whether a, a dial error or an error reply, is the
// very value b is.
func samePointer(a, b error) bool {
	switch a.(type) {
	case *net.OpError, *rueidis.RedisError:
		return a == b // pointers: no comparison of uncomparable values
	}
	return false
}

// probeChannel is the probes' channel; probeGap bounds how often Closed
// asks; probeWait how long it waits for the answer.
const (
	probeChannel = "respire-go:closed-probe"
	probeGap     = 10 * time.Millisecond
	probeWait    = time.Millisecond
)

var (
	probeEpoch = time.Now()
	cancelled  = func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}()
)
