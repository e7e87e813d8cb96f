package valkeygo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/valkey-io/valkey-go"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/closedprobe"
)

// ErrStandaloneReplicas is NewClient's (and New's) error for a standalone
// valkey-go client made with ClientOption.Standalone.ReplicaAddress: it
// names several nodes and tells none as the primary, and a lock lives on
// the primary alone.
var ErrStandaloneReplicas = errors.New("valkeygo: a standalone valkey-go client with replicas " +
	"(ClientOption.Standalone.ReplicaAddress) is not supported: locks need a client of the primary alone")

// ErrNotPrimary is matched by a Dial error in Sentinel mode when the server
// the client names as the primary says (ROLE) that it is not one: a
// ReplicaOnly client, or a primary demoted before the client learned it.
var ErrNotPrimary = errors.New("valkeygo: the server is not a primary")

// Client is conn.Client over a valkey.Client: the seam the wire engine
// dials through. Every connection it hands out is a dedicated client of
// the user's client (a socket of its own, with the user's dialer, TLS,
// authentication and RESP3). Create it with NewClient; it is safe for
// concurrent use and never closes the user's client.
type Client struct {
	client valkey.Client
	mode   conn.Mode
	watch  *sentinelWatch // NewSentinel: every sentinel's announcements; nil otherwise

	closed *closedprobe.Prober // whether the user's client was closed (see Closed)
}

// NewClient wraps client (it sends nothing). It refuses a standalone client
// with replicas (ErrStandaloneReplicas).
func NewClient(client valkey.Client) (*Client, error) {
	c := &Client{client: client, mode: conn.ModeStandalone}
	switch client.Mode() {
	case valkey.ClientModeCluster:
		c.mode = conn.ModeCluster
	case valkey.ClientModeSentinel:
		c.mode = conn.ModeSentinel
	default:
		if len(client.Nodes()) > 1 {
			return nil, ErrStandaloneReplicas
		}
	}
	c.closed = c.newProber()
	return c, nil
}

// Name implements conn.Client.
func (c *Client) Name() string { return "valkey-go" }

// Mode implements conn.Client.
func (c *Client) Mode() conn.Mode { return c.mode }

// Nodes implements conn.Client: the addresses of valkey-go's node clients
// (a Sentinel client's one node is the primary it follows; under
// NewSentinel, the primary a sentinel announced last, once one has). It
// never blocks.
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

// Dial implements conn.Client: a dedicated client of node's valkey-go node
// client, proved live (see dedicate). A cluster node valkey-go has not
// discovered yet is learned first (see learnNode); a Sentinel client whose
// primary is no longer node answers conn.ErrUnknownNode.
func (c *Client) Dial(ctx context.Context, node string) (conn.Conn, error) {
	d, err := c.dedicate(ctx, node)
	if err != nil {
		return nil, err
	}
	return &vconn{d: d}, nil
}

// dedicate returns a dedicated client of node that answered a probe, bounded
// by ctx. valkey-go's Dedicate dials (and handshakes) with no ctx, for up to
// its Dialer.Timeout, and hands out the node's failed connection instead
// of an error when it cannot connect; the probe — ROLE in Sentinel mode,
// which must say master, PING elsewhere — turns that into an error here,
// so that a failed dial never reaches a command. Any reply counts (a user
// without the permission gets an error reply). When ctx can end, the dial
// runs on a goroutine of its own, which closes what it got if ctx ended
// first.
func (c *Client) dedicate(ctx context.Context, node string) (valkey.DedicatedClient, error) {
	nc, err := c.nodeClient(ctx, node)
	if err != nil {
		return nil, err
	}
	if ctx.Done() == nil {
		return c.prove(ctx, nc, node)
	}
	type dialed struct {
		d   valkey.DedicatedClient
		err error
	}
	var state atomic.Int32 // 0 pending, 1 delivered, 2 abandoned
	out := make(chan dialed, 1)
	go func() {
		pctx, cancel := probeContext(ctx)
		defer cancel()
		d, err := c.prove(pctx, nc, node)
		if !state.CompareAndSwap(0, 1) {
			if err == nil {
				d.Close()
			}
			return
		}
		out <- dialed{d, err}
	}()
	select {
	case r := <-out:
		return r.d, r.err
	case <-ctx.Done():
		if state.CompareAndSwap(0, 2) {
			return nil, context.Cause(ctx)
		}
		r := <-out
		return r.d, r.err
	}
}

// prove dedicates a connection of nc and probes it (see dedicate).
func (c *Client) prove(ctx context.Context, nc valkey.Client, node string) (valkey.DedicatedClient, error) {
	d, _ := nc.Dedicate()
	probe := d.B().Ping().Build()
	if c.mode == conn.ModeSentinel {
		probe = d.B().Role().Build()
	}
	r := d.Do(ctx, probe)
	if err := r.NonValkeyError(); err != nil {
		d.Close()
		return nil, fmt.Errorf("valkey-go: dial %s: %w", node, err)
	}
	if role, err := r.ToArray(); c.mode == conn.ModeSentinel && err == nil && len(role) > 0 {
		if s, _ := role[0].ToString(); s != "master" {
			d.Close()
			return nil, fmt.Errorf("%w: %s says ROLE %s", ErrNotPrimary, node, s)
		}
	}
	return d, nil
}

// probeContext is ctx's deadline without its cancellation: valkey-go runs
// a lone command with such a ctx synchronously on the socket (no goroutine
// hand-off), and the caller of dedicate does not wait past ctx's end.
func probeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.Background(), dl)
	}
	return context.Background(), func() {}
}

// nodeClient returns valkey-go's client of node.
func (c *Client) nodeClient(ctx context.Context, node string) (valkey.Client, error) {
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
// serves some slot: valkey-go learns nodes from MOVED replies to its own
// commands, never from our connections' redirects. So one harmless read
// (GET, which every least-privilege user of a lock may run) of a key of a
// slot node serves goes through the client, which follows the MOVED and
// connects to node. The reply is dropped.
func (c *Client) learnNode(ctx context.Context, node string) {
	slots, err := c.client.Do(ctx, c.client.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return
	}
	for _, r := range slots {
		fields, err := r.ToArray()
		if err != nil || len(fields) < 3 {
			continue
		}
		primary, err := fields[2].ToArray()
		if err != nil || len(primary) < 2 {
			continue
		}
		host, _ := primary[0].ToString()
		port, _ := primary[1].AsInt64()
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
