package goredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/redis/go-redis/v9/push"

	"github.com/respire-go/respire/conn"
)

// errListenerClosed: the listener's sockets were closed.
var errListenerClosed = errors.New("the go-redis listener was closed")

// listener is conn.Listener on go-redis, which reads a connection only
// while a command waits: the one connection of a private RESP3 client
// built from the node client's options, kept in a blocking read (a PubSub
// that subscribes to nothing) whose push processor hands each
// "invalidate" push to fn. The engine reads the watched keys on a Conn of
// its own with CLIENT TRACKING ON REDIRECT to ID.
type listener struct {
	fn      func(keys []string)
	rc      *redis.Client // private
	sub     *redis.PubSub
	id      int64
	sockets []net.Conn // every socket rc dialled, so that a close ends its handshake too
	mu      sync.Mutex // guards sockets, shut and sub
	shut    bool
	ended   atomic.Bool   // fn is not called any more
	inFn    atomic.Bool   // fn runs on the receiving goroutine
	done    chan struct{} // closed when the receiving goroutine ended
}

// Listen implements conn.Client (rule GoRedisWatcherEndIsTold). go-redis
// ends I/O only at a deadline: when ctx is cancelled first, the sockets are
// closed under the open.
func (c *client) Listen(ctx context.Context, node string, fn func(keys []string)) (conn.Listener, error) {
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	nc, err := c.nodeClient(ctx, node)
	if err != nil {
		return nil, err
	}
	l := &listener{fn: fn, done: make(chan struct{})}
	hello := make(chan helloInfo, 1)
	l.rc = redis.NewClient(l.options(nc.Options(), hello))
	stop := context.AfterFunc(ctx, l.close)
	laddr, err := l.open(ctx, hello)
	switch {
	case !stop():
		err = context.Cause(ctx)
	case err == nil && c.mode == conn.ModeSentinel && laddr != node:
		err = fmt.Errorf("%w: %s is no longer the master the Sentinel client reaches (%s is)", conn.ErrUnknownNode, node, laddr)
	}
	if err != nil {
		l.close()
		close(l.done)
		return nil, err
	}
	go l.receive()
	return l, nil
}

// options returns the private client's options: a copy of opts (the node
// client's: its address or dialer, credentials, TLS, the user's OnConnect)
// with what a listener needs set explicitly (Options holds normalised
// values, and pointers shared with the user's client), and an OnConnect
// that learns the connection's CLIENT ID and CLIENT INFO's resp= and
// laddr= after the user's.
func (l *listener) options(opts *redis.Options, hello chan<- helloInfo) *redis.Options {
	o := *opts
	o.Protocol, o.MaxRetries, o.Limiter, o.ContextTimeoutEnabled = 3, -1, nil, true
	o.ReadTimeout, o.WriteTimeout = denormalised(opts.ReadTimeout), denormalised(opts.WriteTimeout)
	o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 1, 0, 0, 1
	o.PipelinePoolSize, o.PipelineReadBufferSize, o.PipelineWriteBufferSize, o.AutoPipelineOptions = -1, 0, 0, nil
	o.PushNotificationProcessor, o.ClientSideCacheConfig, o.ClientSideCache = nil, nil, nil
	o.ClientSideCacheStrategy, o.ClientSideCacheRefreshOnInvalidate, o.ClientSideCacheCoalesceMisses = 0, false, false
	o.ConnMaxIdleTime, o.ConnMaxLifetime, o.ConnMaxLifetimeJitter, o.ClientSideCacheInvalidationBatchWindow = -1, 0, 0, 0
	// Its own config, off: the copy's pointer is the user's client's, which
	// go-redis v9.23 writes without a lock when a server refuses (a race).
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	dial, user := opts.Dialer, opts.OnConnect
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err == nil && !l.record(nc) {
			_ = nc.Close()
			return nil, errListenerClosed
		}
		return nc, err
	}
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if user != nil {
			if err := user(ctx, cn); err != nil {
				return err
			}
		}
		id, info := cn.ClientID(ctx), cn.Do(ctx, "CLIENT", "INFO")
		text, _ := info.Val().(string)
		select {
		case hello <- helloInfo{id.Val(), infoField(text, "resp"), infoField(text, "laddr")}:
		default:
		}
		return errors.Join(id.Err(), info.Err())
	}
	return &o
}

// denormalised turns a timeout as Options holds it into what NewClient
// reads alike: 0 (none) is -1, -1 (no deadline) is -2.
func denormalised(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return -1
	case d < 0:
		return -2
	}
	return d
}

// open opens the listener: a PubSub whose PING dials its connection
// (OnConnect learns its identity; receive reads the PONG, or the NOPERM of
// a user without +ping: rule GoRedisWatcherNeedsNoPing). It returns the
// node the connection reached.
func (l *listener) open(ctx context.Context, hello <-chan helloInfo) (laddr string, err error) {
	if err := l.rc.RegisterPushNotificationHandler("invalidate", invalidateHandler{l}, true); err != nil {
		return "", err
	}
	sub := l.rc.Subscribe(ctx)
	l.mu.Lock()
	l.sub = sub
	l.mu.Unlock()
	if err := sub.Ping(ctx); err != nil {
		return "", err
	}
	var h helloInfo
	select {
	case h = <-hello:
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	if h.resp != "3" {
		return "", fmt.Errorf("%w: the listener's connection speaks RESP%s", conn.ErrPushUnsupported, h.resp)
	}
	l.id = h.id
	return h.laddr, nil
}

// helloInfo is what the listener's OnConnect learned.
type helloInfo struct {
	id          int64
	resp, laddr string
}

// receive keeps the listener in its blocking read until it fails, then
// tells fn (keys nil) unless Close ended it. An error reply is no failure.
func (l *listener) receive() {
	defer close(l.done)
	for {
		_, err := l.sub.Receive(context.Background())
		var reply redis.Error
		if err != nil && !errors.As(err, &reply) {
			if !l.ended.Swap(true) {
				l.call(nil)
			}
			return
		}
	}
}

// call calls fn, on the receiving goroutine.
func (l *listener) call(keys []string) {
	l.inFn.Store(true)
	defer l.inFn.Store(false)
	l.fn(keys)
}

// Conn implements conn.Listener: nil, the listener carries no commands.
func (l *listener) Conn() conn.Conn { return nil }

// ID implements conn.Listener: the listening connection's CLIENT ID.
func (l *listener) ID() int64 { return l.id }

// Close implements conn.Listener: the sockets are closed, which ends the
// read at once, and Close waits for the receiving goroutine (unless called
// from fn); fn is not called for it.
func (l *listener) Close() {
	l.ended.Store(true)
	l.close()
	if !l.inFn.Load() {
		<-l.done
	}
}

// record keeps nc, a socket the private client dialled, to close it with
// the listener; false once the listener is closed.
func (l *listener) record(nc net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.shut {
		l.sockets = append(l.sockets, nc)
	}
	return !l.shut
}

// close closes every socket the private client dialled (one still in
// go-redis' handshake is in no pool yet: the client's Close would not
// reach it), its PubSub and the client; idempotent. It holds no lock while
// it closes: go-redis' PubSub may be dialling under its own.
func (l *listener) close() {
	l.mu.Lock()
	shut, sockets, sub := l.shut, l.sockets, l.sub
	l.shut, l.sockets = true, nil
	l.mu.Unlock()
	if shut {
		return
	}
	for _, nc := range sockets {
		_ = nc.Close()
	}
	if sub != nil {
		_ = sub.Close()
	}
	_ = l.rc.Close()
}

// invalidateHandler hands a listener's "invalidate" pushes to its fn.
type invalidateHandler struct{ l *listener }

// HandlePushNotification receives ["invalidate", keys]; keys nil: the
// server forgot everything it tracked (FLUSHALL, FLUSHDB).
func (h invalidateHandler) HandlePushNotification(_ context.Context, _ push.NotificationHandlerContext, n []any) error {
	if h.l.ended.Load() {
		return nil
	}
	var keys []string
	if len(n) > 1 {
		if list, ok := n[1].([]any); ok {
			keys = make([]string, 0, len(list))
			for _, k := range list {
				if s, ok := k.(string); ok {
					keys = append(keys, s)
				}
			}
		}
	}
	h.l.call(keys)
	return nil
}
