package goredis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// The errors of New, returned before anything is sent.
var (
	// ErrUnsupportedClient: the client is neither a *redis.Client
	// (standalone, or from redis.NewFailoverClient) nor a
	// *redis.ClusterClient that learns its slots from the cluster (a Ring
	// spreads keys over independent servers; a ClusterClient with
	// ClusterSlots, such as NewFailoverClusterClient's, has none to learn).
	ErrUnsupportedClient = errors.New("goredis: the client must be a *redis.Client (standalone or from NewFailoverClient) or a *redis.ClusterClient without ClusterSlots")
	// ErrUnboundedIO: a read or write may wait forever (ReadTimeout or
	// WriteTimeout -2, or -1 without ContextTimeoutEnabled: go-redis ends
	// I/O only at a deadline), or the WriteBufferSize is under 64 bytes.
	ErrUnboundedIO = errors.New("goredis: the client's ReadTimeout and WriteTimeout must be finite, or -1 with ContextTimeoutEnabled, and its WriteBufferSize at least 64")
)

// failoverAddr is the Addr of the options of a redis.NewFailoverClient.
const failoverAddr = "FailoverClient"

// probeEvery is how often, at most, Closed asks the client whether it was
// closed while nothing failed (a failed round trip asks at once).
const probeEvery = time.Second

// client is conn.Client over a go-redis client: its Conns are
// EphemeralConns of the user's client, or of a cluster's node clients.
type client struct {
	mode         conn.Mode
	single       *redis.Client        // standalone and Sentinel
	cluster      *redis.ClusterClient // cluster
	addr         string               // standalone: the node
	ctxDeadlines bool                 // go-redis ends I/O at the ctx's deadline
	timeouts     bool                 // and at its own ReadTimeout and WriteTimeout
	ioBound      time.Duration        // timeouts: ReadTimeout + WriteTimeout, the longest a dialled Conn's round trip lasts

	closed    atomic.Pointer[error] // set once the client was found closed
	lastProbe atomic.Int64          // monoNow of the last probe

	mu      sync.Mutex
	nodes   map[string]*redis.Client // cluster: node clients by address
	primary string                   // Sentinel: the master a Conn reached last
	stale   bool                     // Sentinel: ask again before the next command
}

// newClient checks uc (see ErrUnsupportedClient, ErrUnboundedIO) and
// returns its conn.Client. It sends nothing.
func newClient(uc redis.UniversalClient) (*client, error) {
	c := &client{nodes: map[string]*redis.Client{}}
	var read, write time.Duration // normalised: >0 a timeout, 0 none (a ctx deadline applies), <0 no deadline
	var wbuf int
	switch v := uc.(type) {
	case *redis.Client:
		o := v.Options()
		read, write, c.ctxDeadlines, wbuf = o.ReadTimeout, o.WriteTimeout, o.ContextTimeoutEnabled, o.WriteBufferSize
		c.single, c.mode, c.addr = v, conn.ModeStandalone, o.Addr
		if o.Addr == failoverAddr {
			c.mode = conn.ModeSentinel
		}
	case *redis.ClusterClient:
		o := v.Options()
		if o.ClusterSlots != nil {
			return nil, fmt.Errorf("%w (got a ClusterClient with ClusterSlots)", ErrUnsupportedClient)
		}
		read, write, c.ctxDeadlines, wbuf = o.ReadTimeout, o.WriteTimeout, o.ContextTimeoutEnabled, o.WriteBufferSize
		read, write = max(read, -1), max(write, -1) // ClusterOptions keep the user's -2
		c.cluster, c.mode = v, conn.ModeCluster
	default:
		return nil, fmt.Errorf("%w (got %T)", ErrUnsupportedClient, uc)
	}
	c.timeouts = read > 0 && write > 0
	if c.timeouts {
		c.ioBound = read + write
	}
	if read < 0 || write < 0 || (!c.ctxDeadlines && !c.timeouts) || (wbuf > 0 && wbuf < 64) {
		return nil, ErrUnboundedIO
	}
	return c, nil
}

// Name implements conn.Client.
func (c *client) Name() string { return "go-redis" }

// Mode implements conn.Client.
func (c *client) Mode() conn.Mode { return c.mode }

// Nodes implements conn.Client. Standalone: the client's address; cluster:
// the masters of go-redis' slot map, reloaded; Sentinel: the master a Conn
// of the client reached last (CLIENT INFO's laddr=), asked again on a Conn
// dialled for it the first time and after a Conn to it failed.
func (c *client) Nodes(ctx context.Context) ([]string, error) {
	switch c.mode {
	case conn.ModeStandalone:
		return []string{c.addr}, nil
	case conn.ModeCluster:
		return c.clusterNodes(ctx, c.cluster.ForEachMaster)
	}
	c.mu.Lock()
	p, stale := c.primary, c.stale
	c.mu.Unlock()
	if p == "" || stale {
		g, err := c.reach(ctx)
		if err != nil {
			return nil, err
		}
		p = g.node
		g.Close()
	}
	return []string{p}, nil
}

// Dial implements conn.Client: an EphemeralConn of node's client, dialled
// (go-redis dials on a Conn's first round trip: a PING, whose reply, even
// NOPERM, says the handshake is done), so that a fence connection never
// waits for a dial. Behind Sentinel that round trip is CLIENT INFO, whose
// laddr= names the node reached: another one than node is ErrUnknownNode.
func (c *client) Dial(ctx context.Context, node string) (conn.Conn, error) {
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	if c.mode == conn.ModeSentinel {
		g, err := c.reach(ctx)
		if err != nil {
			return nil, err
		}
		if g.node != node {
			g.Close()
			return nil, fmt.Errorf("%w: %s is no longer the master the Sentinel client reaches (%s is)", conn.ErrUnknownNode, node, g.node)
		}
		return g, nil
	}
	nc, err := c.nodeClient(ctx, node)
	if err != nil {
		return nil, err
	}
	g := newConn(c, node, nc.EphemeralConn())
	var r [1]conn.Reply
	if err := g.Do(ctx, []conn.Command{conn.PingCommand()}, r[:]); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// usable refuses a done ctx and a client found closed.
func (c *client) usable(ctx context.Context) error {
	if p := c.closed.Load(); p != nil {
		return &conn.ClientClosedError{Client: c.Name(), Err: *p}
	}
	return ctx.Err()
}

// Closed implements conn.Client: redis.ErrClosed once the client was
// closed. At most once per probeEvery (and after every failed round trip)
// it asks with a PING under a ctx already cancelled: go-redis' pool says
// it is closed before it looks at the ctx, and sends nothing either way.
func (c *client) Closed() error {
	if p := c.closed.Load(); p != nil {
		return *p
	}
	now, last := monoNow(), c.lastProbe.Load()
	if (last != 0 && now-last < int64(probeEvery)) || !c.lastProbe.CompareAndSwap(last, now) {
		return nil
	}
	return c.probe()
}

// probe asks whether the client was closed (see Closed) and records it.
func (c *client) probe() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pinged, err := c.single, error(nil)
	if c.mode == conn.ModeCluster {
		pinged, err = c.cluster.MasterForKey(ctx, "")
	}
	if err == nil {
		err = pinged.Process(ctx, redis.NewStatusCmd(ctx, "ping"))
	}
	if !errors.Is(err, redis.ErrClosed) {
		return nil
	}
	closed := redis.ErrClosed
	c.closed.CompareAndSwap(nil, &closed)
	return closed
}

// closedCause is err, the cause of a round trip that wrote nothing, naming
// the client when it was closed.
func (c *client) closedCause(err error) error {
	if c.probe() != nil {
		return &conn.ClientClosedError{Client: c.Name(), Err: err}
	}
	return err
}

// learnFailure is told of each round trip that failed on g: a cluster
// node's client is looked up again (go-redis closes those of nodes it
// dropped), a Sentinel master asked again (go-redis closes the Conns to
// the old master when it learns of a switch).
func (c *client) learnFailure(g *gconn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, g.node)
	c.stale = c.stale || (c.mode == conn.ModeSentinel && g.node == c.primary)
}

// clusterNodes reloads go-redis' slot map, records the clients each (a
// ClusterClient.ForEachMaster or ForEachShard) gives, and returns their
// addresses.
func (c *client) clusterNodes(ctx context.Context, each func(context.Context, func(context.Context, *redis.Client) error) error) ([]string, error) {
	var addrs []string
	err := each(ctx, func(_ context.Context, nc *redis.Client) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		addrs = append(addrs, nc.Options().Addr)
		c.nodes[nc.Options().Addr] = nc
		return nil
	})
	slices.Sort(addrs)
	return addrs, err
}

// nodeClient returns the client that reaches node: the client outside
// cluster mode (standalone: only for its address), or the node client
// go-redis knows (its slot map reloaded once when node is not among them).
func (c *client) nodeClient(ctx context.Context, node string) (*redis.Client, error) {
	if c.mode != conn.ModeCluster {
		if c.mode == conn.ModeStandalone && node != c.addr {
			return nil, fmt.Errorf("%w: %s (the client's is %s)", conn.ErrUnknownNode, node, c.addr)
		}
		return c.single, nil
	}
	c.mu.Lock()
	nc := c.nodes[node]
	c.mu.Unlock()
	if nc == nil {
		if _, err := c.clusterNodes(ctx, c.cluster.ForEachShard); err != nil {
			return nil, err
		}
		c.mu.Lock()
		nc = c.nodes[node]
		c.mu.Unlock()
	}
	if nc == nil {
		return nil, fmt.Errorf("%w: %s is not in go-redis' slot map", conn.ErrUnknownNode, node)
	}
	return nc, nil
}

// reach returns a Conn of the Sentinel client, named after the node it
// reached (its CLIENT INFO's laddr=, Redis 6.2 and later), which becomes
// the master the adapter knows.
func (c *client) reach(ctx context.Context) (*gconn, error) {
	g := newConn(c, "", c.single.EphemeralConn())
	var r [1]conn.Reply
	err := g.Do(ctx, []conn.Command{conn.ClientInfoCommand()}, r[:])
	if err == nil {
		if g.node = infoField(r[0].Text, "laddr"); r[0].Kind == conn.ReplyError || g.node == "" {
			err = fmt.Errorf("CLIENT INFO named no node (laddr=; Redis 6.2 or later is needed behind Sentinel): %s", r[0].Text)
		}
	}
	if err != nil {
		g.Close()
		return nil, err
	}
	c.notePrimary(g.node)
	return g, nil
}

// notePrimary records that a Conn of the Sentinel client reached node.
func (c *client) notePrimary(node string) {
	c.mu.Lock()
	c.primary, c.stale = node, false
	c.mu.Unlock()
}

// infoField returns the named field of a CLIENT INFO line.
func infoField(info, name string) string {
	for _, field := range strings.Fields(info) {
		if v, ok := strings.CutPrefix(field, name+"="); ok {
			return v
		}
	}
	return ""
}

var monoEpoch = time.Now()

// monoNow is the monotonic time since the package loaded.
func monoNow() int64 { return int64(time.Since(monoEpoch)) }
