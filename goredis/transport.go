//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/respire-go/respire/conn"
)

// mode is the shape of the client the transport runs on.
type mode uint8

const (
	modeStandalone mode = iota + 1
	modeCluster
	modeSentinel // a *redis.Client made by redis.NewFailoverClient
)

// failoverAddr is the Addr go-redis gives the options of a client made by
// redis.NewFailoverClient (its dialer asks the Sentinels for the master).
const failoverAddr = "FailoverClient"

// maxRedirects bounds how many MOVED/ASK hops one operation follows (as
// conn.Pool does).
const maxRedirects = 5

// The errors of NewTransport, returned before anything is sent.
var (
	// ErrUnsupportedClient: the client is neither a *redis.Client nor a
	// *redis.ClusterClient (a *redis.Ring shards keys over independent
	// servers, which no lock can span).
	ErrUnsupportedClient = errors.New("goredis: the client must be a *redis.Client (standalone or from NewFailoverClient) or a *redis.ClusterClient")
	// ErrUnboundedIO: the client's options let a read or write wait
	// forever (ReadTimeout or WriteTimeout -1 or -2, and
	// ContextTimeoutEnabled off): go-redis interrupts I/O only by a
	// deadline, so a frozen server would hold a session, and Close, for as
	// long as TCP does.
	ErrUnboundedIO = errors.New("goredis: the client's ReadTimeout and WriteTimeout must be finite (or ContextTimeoutEnabled set): go-redis interrupts I/O only by a deadline")
)

// Transport is conn.Transport over a go-redis v9 client: one current
// session per node (a go-redis Conn owned by its drainer goroutine), fences
// on other Conns of the node, one tracking watcher per node, and the
// replicated fenced acquisition on a Conn of its own. Create it with
// NewTransport; it is safe for concurrent use. Close it when done: it never
// closes the client it was given.
type Transport struct {
	mode    mode
	single  *redis.Client        // standalone and Sentinel
	cluster *redis.ClusterClient // cluster
	addr    string               // standalone: the node's address as the client names it

	obs          *conn.Observer         // telemetry (SetObserver); nil: none
	idleCheck    atomic.Int64           // see SetIdleCheck
	primary      atomic.Pointer[string] // Sentinel: the node the latest Conn reached (laddr)
	lastProbe    atomic.Int64           // monoNow of the last client probe (ClientAlive)
	clientClosed atomic.Bool

	mu       sync.Mutex
	sessions map[string]*session   // current session per node
	open     map[*session]struct{} // every session not yet retired
	nodes    map[string]*redis.Client
	closed   bool
	opening  singleflight.Group

	running sync.WaitGroup // drainers, watcher readers and background closes

	watch watchState
}

// Option configures a Transport.
type Option func(*settings)

type settings struct {
	idleCheck time.Duration
}

// WithIdleCheck sets how long a session may stay without a reply before
// the next batch on it is preceded by a liveness PING (default
// conn.DefaultIdleCheck; zero or less: before every batch).
func WithIdleCheck(d time.Duration) Option { return func(s *settings) { s.idleCheck = d } }

// NewTransport returns the transport over client: a standalone
// *redis.Client, a *redis.Client from redis.NewFailoverClient (Sentinel),
// or a *redis.ClusterClient. It sends nothing; sessions open on first use.
// It refuses, with ErrUnsupportedClient or ErrUnboundedIO, a client it
// cannot keep the guarantees on (see docs/compatibility.md, "go-redis").
// The client stays the caller's: Close it after the transport.
func NewTransport(client redis.UniversalClient, opts ...Option) (*Transport, error) {
	cfg := settings{idleCheck: conn.DefaultIdleCheck}
	for _, o := range opts {
		o(&cfg)
	}
	t := &Transport{sessions: map[string]*session{}, open: map[*session]struct{}{},
		nodes: map[string]*redis.Client{}}
	t.idleCheck.Store(int64(cfg.idleCheck))
	switch c := client.(type) {
	case *redis.Client:
		o := c.Options()
		if err := boundedIO(o.ReadTimeout, o.WriteTimeout, o.ContextTimeoutEnabled); err != nil {
			return nil, err
		}
		t.single, t.mode, t.addr = c, modeStandalone, o.Addr
		if o.Addr == failoverAddr {
			t.mode, t.addr = modeSentinel, ""
		}
	case *redis.ClusterClient:
		o := c.Options()
		if err := boundedIO(o.ReadTimeout, o.WriteTimeout, o.ContextTimeoutEnabled); err != nil {
			return nil, err
		}
		t.cluster, t.mode = c, modeCluster
	default:
		return nil, fmt.Errorf("%w (got %T)", ErrUnsupportedClient, client)
	}
	return t, nil
}

// boundedIO refuses options under which a read or write has no deadline.
// It reads normalised options (Client.Options): there 0 means "no
// timeout" (the user's -1) and -1 "no deadline at all" (the user's -2).
func boundedIO(read, write time.Duration, ctxTimeout bool) error {
	if ctxTimeout || (read > 0 && write > 0) {
		return nil
	}
	return ErrUnboundedIO
}

// SetIdleCheck sets the idle threshold (see WithIdleCheck) and returns the
// previous one; it takes effect for the next batch.
func (t *Transport) SetIdleCheck(d time.Duration) time.Duration {
	return time.Duration(t.idleCheck.Swap(int64(d)))
}

// Cluster implements conn.Transport.
func (t *Transport) Cluster() bool { return t.mode == modeCluster }

// IsPrimary implements conn.Transport: outside Sentinel mode always true;
// with Sentinel, whether node is the node the client's latest connection
// reached (the FailoverClient dials only the master it knows). It sends
// nothing.
func (t *Transport) IsPrimary(node string) bool {
	if t.mode != modeSentinel {
		return true
	}
	p := t.primary.Load()
	return p != nil && *p == node
}

// notePrimary records that a connection of the Sentinel client reached
// node: the client dials only its current master.
func (t *Transport) notePrimary(node string) {
	if t.mode == modeSentinel && node != "" {
		if old := t.primary.Swap(&node); old != nil && *old != node {
			t.dropStaleWatchers(node)
			t.demoteOthers(node)
		}
	}
}

// demoteOthers retires, demoted, the sessions of nodes other than primary.
func (t *Transport) demoteOthers(primary string) {
	t.mu.Lock()
	var stale []*session
	for s := range t.open {
		if s.node != primary {
			stale = append(stale, s)
		}
	}
	t.mu.Unlock()
	for _, s := range stale {
		s.demoted.Store(true)
		t.retireFor(s, conn.RetiredDemoted)
	}
}

// RetireAll implements conn.Transport: every session open now is retired
// (commands in flight on them become uncertain, queued ones not
// submitted); later calls open fresh ones. It blocks until their drainers
// stopped.
func (t *Transport) RetireAll() {
	t.mu.Lock()
	open := t.open
	t.open = map[*session]struct{}{}
	t.sessions = map[string]*session{}
	t.mu.Unlock()
	for s := range open {
		s.retire(conn.RetiredClosed)
	}
	for s := range open {
		<-s.stopped
	}
}

// Close implements conn.Transport: every session and watcher is closed for
// good and later calls fail with conn.ErrPoolClosed (NotSubmitted). It
// blocks until every goroutine and Conn of the transport ended; a batch on
// a frozen server ends at its deadline (the client's ReadTimeout or the
// batch ctx's), a tracked read at once (the watchers' private clients are
// closed under it). Idempotent; the client is not closed.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	open := t.open
	t.open = map[*session]struct{}{}
	t.sessions = map[string]*session{}
	t.mu.Unlock()
	for s := range open {
		s.retire(conn.RetiredClosed)
	}
	t.closeWatchers()
	t.running.Wait()
}

// ClientAlive implements conn.Transport: an error matching
// conn.ErrClientClosed once the go-redis client was closed. go-redis
// refuses every command of a closed client at once with redis.ErrClosed,
// sending nothing; at most once per idle-check period a PING on the
// client's pool asks (on its own goroutine, waited for a few milliseconds).
func (t *Transport) ClientAlive() error {
	if t.isClosed() {
		return nil // nothing more is sent; later calls answer conn.ErrPoolClosed
	}
	if t.clientClosed.Load() {
		return &conn.Error{Class: conn.NotSubmitted, Op: "client", Err: errClientClosed}
	}
	now, last := monoNow(), t.lastProbe.Load()
	recent := last != 0 && now-last < max(t.idleCheck.Load(), int64(time.Millisecond))
	if recent || !t.lastProbe.CompareAndSwap(last, now) {
		return nil
	}
	done := make(chan struct{})
	t.running.Go(func() {
		defer close(done)
		t.probeClient()
	})
	timer := time.NewTimer(5 * time.Millisecond)
	defer timer.Stop()
	select {
	case <-done:
		if t.clientClosed.Load() {
			return &conn.Error{Class: conn.NotSubmitted, Op: "client", Err: errClientClosed}
		}
	case <-timer.C:
	}
	return nil
}

// isClosed reports whether Close was called.
func (t *Transport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// errClientClosed matches conn.ErrClientClosed.
var errClientClosed = fmt.Errorf("%w (go-redis: %w)", conn.ErrClientClosed, redis.ErrClosed)

// probeClient pings through the client and records a closed one. On a
// cluster it pings one primary's client (from the slot map go-redis
// already has): ClusterClient.Ping would first fetch COMMAND's whole table
// (go-redis v9.23 looks up every command's routing policy), and the
// transport never sends discovery commands.
func (t *Transport) probeClient() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var err error
	if t.mode == modeCluster {
		var primary *redis.Client
		if primary, err = t.cluster.MasterForKey(ctx, ""); err == nil {
			err = primary.Ping(ctx).Err()
		}
	} else {
		err = t.single.Ping(ctx).Err()
	}
	if errors.Is(err, redis.ErrClosed) {
		t.clientClosed.Store(true)
	}
}

// CheckFencedKeys implements conn.Transport: in cluster mode, a lease key
// and counter key of different hash slots are refused (NotSubmitted,
// conn.ErrCrossSlot). It sends nothing.
func (t *Transport) CheckFencedKeys(leaseKey, counterKey string) error {
	if t.mode == modeCluster && slot(leaseKey) != slot(counterKey) {
		return &conn.Error{Class: conn.NotSubmitted, Op: "fenced-acquire", Err: conn.ErrCrossSlot}
	}
	return nil
}

var monoEpoch = time.Now()

func monoNow() int64 { return int64(time.Since(monoEpoch)) }

// The transport is a conn.Transport, its sessions conn.Sessions.
var (
	_ conn.Transport = (*Transport)(nil)
	_ conn.Session   = (*session)(nil)
)
