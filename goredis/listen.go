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

// errListenerClosed: the listener's sockets were closed (Close, or a
// failed open).
var errListenerClosed = errors.New("the go-redis listener was closed")

// listener is conn.Listener on go-redis, which reads a connection only
// while a command waits for its reply: the one connection of a private
// RESP3 client built from the node client's options, kept in a blocking
// read for good (a PubSub that subscribes to nothing), whose push
// processor hands every "invalidate" push to fn. The engine reads the
// watched keys on a Conn of its own with CLIENT TRACKING ON REDIRECT to
// ID (so Conn is nil).
type listener struct {
	node    string
	fn      func(keys []string)
	rc      *redis.Client // private: its one connection is the listener
	sub     *redis.PubSub
	id      int64
	sockets sockets
	ended   atomic.Bool   // closing: pushes mean nothing any more
	inFn    atomic.Bool   // fn runs (on the receiving goroutine)
	done    chan struct{} // closed when the receiving goroutine ended
	once    sync.Once
}

// Listen implements conn.Client (rule GoRedisWatcherEndIsTold).
func (c *client) Listen(ctx context.Context, node string, fn func(keys []string)) (conn.Listener, error) {
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	opts, err := c.nodeOptions(ctx, node)
	if err != nil {
		return nil, err
	}
	l := &listener{node: node, fn: fn, done: make(chan struct{})}
	hello := make(chan helloInfo, 1)
	l.rc = redis.NewClient(l.options(opts, hello))
	// go-redis ends I/O only at a deadline: a cancellation closes the
	// sockets under the open.
	stop := context.AfterFunc(ctx, l.sockets.close)
	err = l.open(ctx, hello)
	if !stop() {
		err = context.Cause(ctx)
	}
	if err != nil {
		l.shut()
		close(l.done)
		return nil, err
	}
	if c.mode == conn.ModeSentinel {
		c.notePrimary(node)
	}
	go l.receive()
	return l, nil
}

// helloInfo is what the listener's OnConnect learned: its CLIENT ID and
// CLIENT INFO's resp= and laddr=.
type helloInfo struct {
	id          int64
	resp, laddr string
	err         error
}

// options returns the private client's options: a copy of opts (the node
// client's: same address or dialer, credentials, TLS, the user's
// OnConnect) with every field whose copy would not mean what a listener
// needs set explicitly (Options holds normalised values and pointers
// shared with the user's client), RESP3, and an OnConnect that learns the
// connection's identity after the user's.
func (l *listener) options(opts *redis.Options, hello chan<- helloInfo) *redis.Options {
	o := *opts
	o.Protocol, o.MaxRetries, o.Limiter = 3, -1, nil
	o.ContextTimeoutEnabled = true // the ctx of Listen bounds the open
	o.ReadTimeout, o.WriteTimeout = denormalised(opts.ReadTimeout), denormalised(opts.WriteTimeout)
	o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 1, 0, 0, 1
	o.PipelinePoolSize, o.PipelineReadBufferSize, o.PipelineWriteBufferSize, o.AutoPipelineOptions = -1, 0, 0, nil
	o.PushNotificationProcessor = nil // a fresh one; never the user's client's
	o.ClientSideCacheConfig, o.ClientSideCache, o.ClientSideCacheStrategy = nil, nil, 0
	o.ClientSideCacheRefreshOnInvalidate, o.ClientSideCacheCoalesceMisses, o.ClientSideCacheInvalidationBatchWindow = false, false, 0
	o.ConnMaxIdleTime, o.ConnMaxLifetime, o.ConnMaxLifetimeJitter = -1, 0, 0
	// Its own maintenance-notification config, off: the copy's pointer is
	// the user's client's, which go-redis v9.23 writes without a lock when
	// a server refuses the handshake (auto mode): a data race.
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	o.Dialer = l.sockets.record(opts.Dialer)
	user := opts.OnConnect
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if user != nil {
			if err := user(ctx, cn); err != nil {
				return err
			}
		}
		var id *redis.IntCmd
		var info *redis.Cmd
		_, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
			id, info = p.ClientID(ctx), p.Do(ctx, "CLIENT", "INFO")
			return nil
		})
		h := helloInfo{err: err, id: id.Val()}
		if err == nil {
			text, _ := info.Val().(string)
			f := infoFields(text, "resp", "laddr")
			h.resp, h.laddr = f[0], f[1]
		}
		select {
		case hello <- h:
		default:
		}
		return nil
	}
	return &o
}

// denormalised turns a timeout as Options holds it back into what
// NewClient reads the same way: 0 (none) is -1, -1 (no deadline) is -2.
func denormalised(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return -1
	case d < 0:
		return -2
	}
	return d
}

// open opens the listener: a PubSub on the private client whose PING
// dials its connection (OnConnect learns its identity; the PONG, or the
// NOPERM of a user without +ping, is read by receive: rule
// GoRedisWatcherNeedsNoPing).
func (l *listener) open(ctx context.Context, hello <-chan helloInfo) error {
	if err := l.rc.RegisterPushNotificationHandler("invalidate", invalidateHandler{l}, true); err != nil {
		return err
	}
	l.sub = l.rc.Subscribe(ctx) // no channel
	if err := l.sub.Ping(ctx); err != nil {
		return err
	}
	var h helloInfo
	select {
	case h = <-hello:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	switch {
	case h.err != nil:
		return h.err
	case h.resp != "3":
		return fmt.Errorf("%w: the listener's connection speaks RESP%s", conn.ErrPushUnsupported, h.resp)
	case l.rc.Options().Addr == failoverAddr && h.laddr != l.node:
		return fmt.Errorf("%w: %s is no longer the master the Sentinel client reaches (%s is)", conn.ErrUnknownNode, l.node, h.laddr)
	}
	l.id = h.id
	return nil
}

// receive keeps the listener in its blocking read (go-redis' push
// processor hands each push to the handler while it waits) until the read
// fails, then tells fn, keys nil, unless Close ended it. An error reply is
// no failure: the one command the listener sends is the PING that opened
// it.
func (l *listener) receive() {
	defer close(l.done)
	for {
		_, err := l.sub.Receive(context.Background())
		if err == nil || isServerReply(err) {
			continue
		}
		if !l.ended.Swap(true) {
			l.call(nil)
		}
		return
	}
}

// Conn implements conn.Listener: nil, the listener carries no commands.
func (l *listener) Conn() conn.Conn { return nil }

// ID implements conn.Listener: the listening connection's CLIENT ID.
func (l *listener) ID() int64 { return l.id }

// call calls fn on the receiving goroutine.
func (l *listener) call(keys []string) {
	l.inFn.Store(true)
	defer l.inFn.Store(false)
	l.fn(keys)
}

// Close implements conn.Listener: the listener's sockets are closed, which
// ends its read at once, and Close waits for its goroutine (fn is not
// called for it), unless it is called from fn.
func (l *listener) Close() {
	l.ended.Store(true)
	l.shut()
	if !l.inFn.Load() {
		<-l.done
	}
}

// shut closes the listener's PubSub, sockets and private client; once.
func (l *listener) shut() {
	l.once.Do(func() {
		if l.sub != nil {
			_ = l.sub.Close()
		}
		l.sockets.close()
		_ = l.rc.Close()
	})
}

// invalidateHandler hands a listener's "invalidate" pushes to its fn.
type invalidateHandler struct{ l *listener }

// HandlePushNotification receives ["invalidate", keys]; keys nil means the
// server forgot everything it tracked (FLUSHALL, FLUSHDB).
func (h invalidateHandler) HandlePushNotification(_ context.Context, _ push.NotificationHandlerContext, n []any) error {
	l := h.l
	if l.ended.Load() {
		return nil
	}
	var list []any
	if len(n) > 1 {
		list, _ = n[1].([]any)
	}
	var keys []string
	if list != nil {
		keys = make([]string, 0, len(list))
		for _, k := range list {
			if s, ok := k.(string); ok {
				keys = append(keys, s)
			}
		}
	}
	l.call(keys)
	return nil
}

// sockets are the sockets of a listener's private client, recorded as
// they are dialled so that Close closes them all, one still in go-redis'
// handshake included (it is in no pool yet, so the client's Close would
// not reach it).
type sockets struct {
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// record returns dial (a normalised Options' Dialer: never nil) recording
// every socket it opens; once the sockets are closed it opens none.
func (ss *sockets) record(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(
	ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		ss.mu.Lock()
		defer ss.mu.Unlock()
		if ss.closed {
			_ = c.Close()
			return nil, errListenerClosed
		}
		ss.conns = append(ss.conns, c)
		return c, nil
	}
}

// close closes every socket recorded, and any dialled later.
func (ss *sockets) close() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.closed = true
	for _, c := range ss.conns {
		_ = c.Close()
	}
	ss.conns = nil
}
