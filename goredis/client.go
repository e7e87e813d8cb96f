package goredis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// failoverAddr is the Addr go-redis gives the options of a client made by
// redis.NewFailoverClient (its dialer asks the Sentinels for the master).
const failoverAddr = "FailoverClient"

// minWriteBuffer is the smallest WriteBufferSize New accepts: go-redis must
// hold a command's header in its buffer until it writes the name (see
// firstArg).
const minWriteBuffer = 64

// probeEvery is how often, at most, Closed asks the client whether it was
// closed while nothing failed (a failed round trip asks at once).
const probeEvery = time.Second

// The errors of New, returned before anything is sent.
var (
	// ErrUnsupportedClient: the client is neither a *redis.Client
	// (standalone, or from redis.NewFailoverClient) nor a
	// *redis.ClusterClient that learns its slots from the cluster (a
	// *redis.Ring shards keys over independent servers, which no lock can
	// span; a ClusterClient with a ClusterSlots function, such as
	// redis.NewFailoverClusterClient's, has no slots to learn).
	ErrUnsupportedClient = errors.New("goredis: the client must be a *redis.Client (standalone or from NewFailoverClient) or a *redis.ClusterClient without ClusterSlots")
	// ErrUnboundedIO: the client's options let a read or write wait
	// forever: ReadTimeout or WriteTimeout -2 (no deadline at all), or -1
	// without ContextTimeoutEnabled (go-redis interrupts I/O only by a
	// deadline), or a WriteBufferSize under 64 bytes.
	ErrUnboundedIO = errors.New("goredis: the client's ReadTimeout and WriteTimeout must be finite, or -1 with ContextTimeoutEnabled, and its WriteBufferSize at least 64")
)

// client is conn.Client over a go-redis client: its Conns are
// EphemeralConns of the user's client (or of a cluster's node clients),
// so that the user's dialer, TLS, credentials, pool and hooks carry the
// lock commands.
type client struct {
	mode    conn.Mode
	single  *redis.Client        // standalone and Sentinel
	cluster *redis.ClusterClient // cluster
	addr    string               // standalone: the node's address

	ctxDeadlines bool          // go-redis bounds every I/O by the ctx's deadline
	ioBound      time.Duration // otherwise, the longest a round trip on a dialled Conn takes

	closed    atomic.Pointer[error] // set once the client was found closed
	lastProbe atomic.Int64          // monoNow of the last probe

	mu      sync.Mutex
	nodes   map[string]*redis.Client // cluster: node clients by address
	primary string                   // Sentinel: the master the client reached last
	stale   bool                     // Sentinel: ask the client again
	spare   *gconn                   // Sentinel: a Conn to primary, dialled to learn it
	learnMu sync.Mutex               // one learn of the primary at a time
}

// newClient checks uc and returns its conn.Client. It sends nothing.
func newClient(uc redis.UniversalClient) (*client, error) {
	c := &client{nodes: map[string]*redis.Client{}}
	var read, write time.Duration // go-redis' normalised: 0 none (a ctx deadline applies), <0 never
	var ctxTimeout bool
	var wbuf int
	switch v := uc.(type) {
	case *redis.Client:
		o := v.Options()
		read, write, ctxTimeout, wbuf = o.ReadTimeout, o.WriteTimeout, o.ContextTimeoutEnabled, o.WriteBufferSize
		c.single, c.mode, c.addr = v, conn.ModeStandalone, o.Addr
		if o.Addr == failoverAddr {
			c.mode, c.addr = conn.ModeSentinel, ""
		}
	case *redis.ClusterClient:
		o := v.Options()
		if o.ClusterSlots != nil {
			return nil, fmt.Errorf("%w (got a ClusterClient with ClusterSlots)", ErrUnsupportedClient)
		}
		// ClusterOptions keep the user's -2 (never) and turn -1 into 0.
		read, write, ctxTimeout, wbuf = clusterIO(o.ReadTimeout), clusterIO(o.WriteTimeout), o.ContextTimeoutEnabled, o.WriteBufferSize
		c.cluster, c.mode = v, conn.ModeCluster
	default:
		return nil, fmt.Errorf("%w (got %T)", ErrUnsupportedClient, uc)
	}
	if read < 0 || write < 0 || (!ctxTimeout && (read == 0 || write == 0)) || (wbuf > 0 && wbuf < minWriteBuffer) {
		return nil, ErrUnboundedIO
	}
	c.ctxDeadlines, c.ioBound = ctxTimeout, read+write
	return c, nil
}

// clusterIO maps a ClusterOptions timeout onto a Client's normalised one.
func clusterIO(d time.Duration) time.Duration {
	if d == -2 {
		return -1
	}
	return d
}

// Name implements conn.Client.
func (c *client) Name() string { return "go-redis" }

// Mode implements conn.Client.
func (c *client) Mode() conn.Mode { return c.mode }

// Nodes implements conn.Client. Standalone: the client's address. Cluster:
// the masters of go-redis' slot map, reloaded. Sentinel: the master the
// client's last Conn reached (CLIENT INFO's laddr=); the first time, and
// after a Conn of the client failed, it dials a Conn to learn it, kept for
// the next Dial.
func (c *client) Nodes(ctx context.Context) ([]string, error) {
	switch c.mode {
	case conn.ModeStandalone:
		return []string{c.addr}, nil
	case conn.ModeCluster:
		return c.clusterNodes(ctx, true)
	}
	c.mu.Lock()
	p, stale := c.primary, c.stale
	c.mu.Unlock()
	if p != "" && !stale {
		return []string{p}, nil
	}
	p, err := c.learnPrimary(ctx)
	if err != nil {
		return nil, err
	}
	return []string{p}, nil
}

// Dial implements conn.Client: an EphemeralConn of node's client. It sends
// nothing (go-redis dials on the first round trip, whose failure before
// the write is ErrNotWritten), but in Sentinel mode, where it asks CLIENT
// INFO which node the Conn reached and fails unless it is node.
func (c *client) Dial(ctx context.Context, node string) (conn.Conn, error) {
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	switch c.mode {
	case conn.ModeStandalone:
		if node != c.addr {
			return nil, fmt.Errorf("%w: %s (the client's is %s)", conn.ErrUnknownNode, node, c.addr)
		}
		return newConn(c, node, c.single.EphemeralConn()), nil
	case conn.ModeCluster:
		nc, err := c.nodeClient(ctx, node)
		if err != nil {
			return nil, err
		}
		return newConn(c, node, nc.EphemeralConn()), nil
	}
	return c.dialPrimary(ctx, node)
}

// usable refuses a done ctx and a client found closed.
func (c *client) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p := c.closed.Load(); p != nil {
		return &conn.ClientClosedError{Client: c.Name(), Err: *p}
	}
	return nil
}

// Closed implements conn.Client: redis.ErrClosed once the client was
// closed. go-redis refuses every command of a closed client with it before
// anything is written; at most once per probeEvery (and after every failed
// round trip) a PING with a context already cancelled asks: go-redis'
// pool checks that it is closed before it looks at the context, and sends
// nothing either way.
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

// probe asks the client whether it was closed (see Closed); it records the
// answer and returns redis.ErrClosed when it was.
func (c *client) probe() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var err error
	if c.mode == conn.ModeCluster {
		var nc *redis.Client
		if nc, err = c.cluster.MasterForKey(ctx, ""); err == nil {
			err = nc.Process(ctx, redis.NewStatusCmd(ctx, "ping"))
		}
	} else {
		err = c.single.Process(ctx, redis.NewStatusCmd(ctx, "ping"))
	}
	if !errors.Is(err, redis.ErrClosed) {
		return nil
	}
	closed := redis.ErrClosed
	c.closed.CompareAndSwap(nil, &closed)
	return closed
}

// closedCause returns err, the cause of a round trip that wrote nothing,
// naming the closed client when the client was closed.
func (c *client) closedCause(err error) error {
	if c.probe() != nil {
		return &conn.ClientClosedError{Client: c.Name(), Err: err}
	}
	return err
}

// learnFailure is told of every round trip that failed on g: in Sentinel
// mode the master is asked again before the next command (go-redis closes
// the Conns to the old master when it learns of a switch); in cluster mode
// the node's client is looked up again (go-redis closes the clients of
// nodes it dropped).
func (c *client) learnFailure(g *gconn) {
	switch c.mode {
	case conn.ModeCluster:
		c.forgetNode(g.node)
	case conn.ModeSentinel:
		c.mu.Lock()
		if g.node == c.primary {
			c.stale = true
		}
		c.mu.Unlock()
	}
}

// infoFields returns the named fields of a CLIENT INFO line (addr=, laddr=,
// resp=…) in the order asked.
func infoFields(info string, names ...string) []string {
	vals := make([]string, len(names))
	for _, field := range strings.Fields(info) {
		for i, n := range names {
			if v, ok := strings.CutPrefix(field, n+"="); ok {
				vals[i] = v
			}
		}
	}
	return vals
}

var monoEpoch = time.Now()

func monoNow() int64 { return int64(time.Since(monoEpoch)) }

// The adapter is a conn.Client, its connections conn.Conns.
var (
	_ conn.Client = (*client)(nil)
	_ conn.Conn   = (*gconn)(nil)
)
