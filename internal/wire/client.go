// Package wire is a minimal Redis client of respire-go's own: conn.Client
// over plain TCP sockets speaking RESP3 (RESP2 on request), with AUTH,
// pipelining and invalidation pushes, for standalone servers, clusters
// (any node is dialled by its address) and Sentinel. It is what the root
// module's tests and leasetest run the wire engine on, so that no package
// of the root module a user imports links a Redis client; applications use
// an adapter of their own client (rueidislease, goredis, valkeygo).
//
// It keeps the seam's one safety rule by construction: it owns the socket,
// so a Do error matches conn.ErrNotWritten only when the socket took no
// byte of the pipeline (it was known broken first, or its write returned 0
// bytes). It never re-sends a command.
package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/conn"
)

// Options describes the servers and how to authenticate.
type Options struct {
	// Addrs are the server's address (standalone), the cluster's nodes
	// (Cluster), or the Sentinels' (MasterName set).
	Addrs []string
	// Cluster: Addrs are nodes of a cluster.
	Cluster bool
	// MasterName: Addrs are Sentinels watching this master set.
	MasterName string
	// User (default user when "") and Password of the data nodes; the
	// Sentinels take SentinelPassword.
	User, Password, SentinelPassword string
	// RESP2 speaks RESP2 (no pushes: Listen is refused).
	RESP2 bool
	// Name is Client.Name (default "wire").
	Name string
	// DialTimeout bounds a dial and its handshake (default 5s).
	DialTimeout time.Duration
	// Dial, when not nil, opens every socket (a test's fault proxy records
	// them); default net.Dialer.DialContext.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// TLS, when not nil, wraps every socket in TLS with this configuration.
	TLS *tls.Config
	// DB selects a database (SELECT) on every connection when not 0.
	DB int
	// ClientName names every connection (HELLO … SETNAME) when not "".
	ClientName string
}

// ErrClosed is what Closed returns once Close was called.
var ErrClosed = errors.New("wire: client closed")

// Client is conn.Client over plain sockets. Create it with New; it is safe
// for concurrent use. Close marks it closed (connections already handed
// out stay open: the engine closes them), as a user closes their client.
type Client struct {
	o        Options
	mode     conn.Mode
	closed   atomic.Bool
	sentinel sentinelState
}

// New returns a client for o; it dials nothing yet.
func New(o Options) *Client {
	if o.Name == "" {
		o.Name = "wire"
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	c := &Client{o: o, mode: conn.ModeStandalone}
	switch {
	case o.MasterName != "":
		c.mode = conn.ModeSentinel
	case o.Cluster:
		c.mode = conn.ModeCluster
	}
	return c
}

// Close marks the client closed: Closed reports it from now on.
func (c *Client) Close() { c.closed.Store(true) }

// Name implements conn.Client.
func (c *Client) Name() string { return c.o.Name }

// Mode implements conn.Client.
func (c *Client) Mode() conn.Mode { return c.mode }

// Closed implements conn.Client.
func (c *Client) Closed() error {
	if c.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Nodes implements conn.Client: the one server, the cluster's nodes as
// given, or the master the Sentinels name (asked at most every
// sentinelRefresh; the first time it blocks for the answer).
func (c *Client) Nodes(ctx context.Context) ([]string, error) {
	switch c.mode {
	case conn.ModeSentinel:
		master, err := c.master(ctx)
		if err != nil {
			return nil, err
		}
		return []string{master}, nil
	case conn.ModeCluster:
		return c.o.Addrs, nil
	}
	return c.o.Addrs[:1], nil
}

// Dial implements conn.Client: a socket to node, authenticated, RESP3
// unless Options.RESP2. With Sentinel, a node that is no longer the
// master is refused (conn.ErrUnknownNode).
func (c *Client) Dial(ctx context.Context, node string) (conn.Conn, error) {
	pc, err := c.dial(ctx, node, nil)
	if err != nil {
		return nil, err
	}
	if c.mode == conn.ModeSentinel {
		if err := c.checkMaster(ctx, pc, node); err != nil {
			pc.Close()
			return nil, err
		}
	}
	return pc, nil
}

// Listen implements conn.Client: a RESP3 socket whose invalidation pushes
// go to fn while it also carries the watcher's reads (the Listener is its
// own Conn).
func (c *Client) Listen(ctx context.Context, node string, fn func(keys []string)) (conn.Listener, error) {
	if c.o.RESP2 {
		return nil, fmt.Errorf("%w: the client speaks RESP2", conn.ErrPushUnsupported)
	}
	pc, err := c.dial(ctx, node, fn)
	if err != nil {
		return nil, err
	}
	return listener{pc}, nil
}

// listener is a Listener whose connection carries commands too.
type listener struct{ *pconn }

func (l listener) Conn() conn.Conn { return l.pconn }
func (l listener) ID() int64       { return 0 }

// dial connects to addr and runs the handshake (HELLO 3 with AUTH, or
// AUTH alone for RESP2).
func (c *Client) dial(ctx context.Context, addr string, push func([]string)) (*pconn, error) {
	return c.dialAs(ctx, addr, push, c.o.User, c.o.Password)
}

// dialAs is dial as user with password.
func (c *Client) dialAs(ctx context.Context, addr string, push func([]string), user, password string) (*pconn, error) {
	if err := c.Closed(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.DialTimeout)
	defer cancel()
	nc, err := c.socket(ctx, addr)
	if err != nil {
		return nil, err
	}
	pc := newConn(nc, push)
	if err := c.handshake(ctx, pc, user, password); err != nil {
		pc.Close()
		return nil, err
	}
	return pc, nil
}

// socket opens a socket to addr (Options.Dial, TLS).
func (c *Client) socket(ctx context.Context, addr string) (net.Conn, error) {
	var nc net.Conn
	var err error
	if c.o.Dial != nil {
		nc, err = c.o.Dial(ctx, addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil || c.o.TLS == nil {
		return nc, err
	}
	cfg := c.o.TLS.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return tc, nil
}

// handshake authenticates pc and picks its protocol.
func (c *Client) handshake(ctx context.Context, pc *pconn, user, password string) error {
	var args []string
	switch {
	case !c.o.RESP2:
		args = []string{"HELLO", "3"}
		if password != "" {
			args = append(args, "AUTH", userOr(user), password)
		}
		if c.o.ClientName != "" {
			args = append(args, "SETNAME", c.o.ClientName)
		}
	case password != "":
		args = []string{"AUTH", userOr(user), password}
	default:
		args = []string{"PING"}
	}
	cmds := []conn.Command{{Args: args, Key: -1}}
	if c.o.DB != 0 {
		cmds = append(cmds, conn.Command{Args: []string{"SELECT", strconv.Itoa(c.o.DB)}, Key: -1})
	}
	replies := make([]conn.Reply, len(cmds))
	if err := pc.Do(ctx, cmds, replies); err != nil {
		return err
	}
	for i, r := range replies {
		if r.Kind == conn.ReplyError {
			return fmt.Errorf("wire: %s: %w", cmds[i].Args[0], &conn.ServerError{Code: firstWord(r.Text), Message: r.Text})
		}
	}
	return nil
}

// firstWord is an error reply's code.
func firstWord(text string) string {
	code, _, _ := strings.Cut(text, " ")
	return code
}

func userOr(user string) string {
	if user == "" {
		return "default"
	}
	return user
}

// The client is a conn.Client.
var _ conn.Client = (*Client)(nil)
