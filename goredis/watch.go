//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"golang.org/x/sync/singleflight"

	"github.com/respire-go/respire/conn"
)

// This file is push: one watcher per node. go-redis reads a connection
// only while a command waits for its reply, so a watcher is two
// connections: a listener, the one connection of a private RESP3 client
// built from the node client's options, kept in a blocking read for good
// (a PubSub that subscribes to nothing: go-redis' push processor hands
// every "invalidate" push to the transport while it waits), and a reader,
// the one connection of another private client (so that closing that
// client ends a read in flight at once: closing a Conn does not) with
// CLIENT TRACKING ON REDIRECT <listener> OPTIN NOLOOP, on which
// WatchReadMany sends CLIENT CACHING YES + GET per key (OPTIN tracks only
// the read right after it). Every end of
// a watcher — its listener's read failed (the server closed it, a
// failover, a FLUSHALL's null invalidation), a read on its reader failed,
// the reader was found dead by its idle PING, an error reply to CLIENT
// CACHING — tells the handler, keys nil (rule GoRedisWatcherEndIsTold).

// watchState is the transport's watchers and what nodes refused.
type watchState struct {
	mu       sync.Mutex
	handler  func(node string, keys []string)
	watchers map[string]*watcher
	refused  map[string]refusal
	closed   bool
	opening  singleflight.Group
	pending  map[*watcher]struct{} // opening: Close closes their clients too
}

// refusal is a node's refusal of tracking, held while the node's current
// session is the one it was learned with.
type refusal struct {
	err     error
	session *session
}

// watcher is one node's listener and reader.
type watcher struct {
	t        *Transport
	node     string
	listener *redis.Client // private: its one connection is the listener
	sub      *redis.PubSub
	readers  *redis.Client // private: its one connection is the reader; Close ends a read in flight
	turn     chan struct{} // cap 1: held by the one round trip on the reader
	reader   *redis.Conn
	w        witness
	last     atomic.Int64  // monoNow of the reader's last reply
	ended    atomic.Bool   // closing or closed: pushes mean nothing any more
	retired  atomic.Bool   // retireWatcher ran
	served   bool          // handed to a read (from install on): it may have tracked keys (under watch.mu)
	hello    chan hello    // what the listener's OnConnect learned
	sockets  sockets       // every socket the private clients dialled
	quit     chan struct{} // closed when the watcher ends
	closing  sync.Once     // close's work
}

// SetInvalidationHandler implements conn.Transport, with conn.Pool's
// contract: fn gets the keys whose tracking ended on node, or nil when
// everything tracked there is forgotten (every watcher end but Close's).
func (t *Transport) SetInvalidationHandler(fn func(node string, keys []string)) {
	t.watch.mu.Lock()
	t.watch.handler = fn
	t.watch.mu.Unlock()
}

// WatchRead implements conn.Transport: WatchReadMany of one key.
func (t *Transport) WatchRead(ctx context.Context, key string) (node, token string, found bool, err error) {
	var one [1]conn.WatchReadResult
	r := t.WatchReadMany(ctx, []string{key}, one[:0])[0]
	return r.Node, r.Token, r.Found, r.Err
}

// watcherFor returns node's live watcher, opening one when there is none
// (one open per node at a time).
func (t *Transport) watcherFor(ctx context.Context, node string) (*watcher, error) {
	for {
		cur, _ := t.current(node)
		t.watch.mu.Lock()
		if t.watch.closed {
			t.watch.mu.Unlock()
			return nil, &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: node, Err: conn.ErrPoolClosed}
		}
		if r, ok := t.watch.refused[node]; ok {
			if r.session == cur {
				t.watch.mu.Unlock()
				return nil, &conn.Error{Class: conn.Definite, Op: "watch", Addr: node, Err: r.err}
			}
			delete(t.watch.refused, node)
		}
		if w := t.watch.watchers[node]; w != nil && !w.ended.Load() {
			w.served = true
			t.watch.mu.Unlock()
			return w, nil
		}
		t.watch.mu.Unlock()
		var w *watcher
		select {
		case r := <-t.watch.opening.DoChan(node, func() (any, error) { return t.openTracked(ctx, node) }):
			if r.Err != nil {
				if ctx.Err() == nil && (errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, context.DeadlineExceeded)) {
					continue // the caller that led the open gave up; ours is live
				}
				return nil, r.Err
			}
			w = r.Val.(*watcher)
		case <-ctx.Done():
			return nil, &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: node, Err: context.Cause(ctx)}
		}
		t.watch.mu.Lock()
		w.served = true
		t.watch.mu.Unlock()
		return w, nil
	}
}

// openTracked is openWatcher counted in t.running (it runs on
// singleflight's goroutine, which may outlive its callers), so that Close
// waits for it; after Close it opens nothing.
func (t *Transport) openTracked(ctx context.Context, node string) (*watcher, error) {
	t.watch.mu.Lock()
	if t.watch.closed {
		t.watch.mu.Unlock()
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: node, Err: conn.ErrPoolClosed}
	}
	t.running.Add(1) // under watch.mu before closed is set: before Close's Wait
	t.watch.mu.Unlock()
	defer t.running.Done()
	return t.openWatcher(ctx, node)
}

// openWatcher opens node's listener and reader and points the reader's
// tracking at the listener, pipelined with CLIENT INFO (a RESP2 listener
// or an error reply is a refusal, remembered for the node).
func (t *Transport) openWatcher(ctx context.Context, node string) (*watcher, error) {
	nc, err := t.nodeClient(ctx, node)
	if err != nil {
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: node, Err: err}
	}
	w := newWatcher(t, node, nc.Options())
	if !t.pend(w) {
		w.close()
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: node, Err: conn.ErrPoolClosed}
	}
	defer t.unpend(w)
	id, err := w.listen(ctx)
	if err != nil {
		w.close()
		return nil, t.refuseOrFail(w, err)
	}
	w.reader = w.readers.EphemeralConn()
	w.w.install(w.reader)
	open := []conn.Command{conn.TrackingOffCommand(), conn.TrackingRedirectCommand(id), conn.ClientInfoCommand()}
	t.report(ctx, open...)
	results, err := w.w.roundTrip(ctx, w.reader, open)
	if err == nil {
		for _, r := range results {
			if r.transport != nil {
				err = r.transport
			} else if r.reply.Kind == conn.ReplyError && err == nil {
				err = &serverError{text: r.reply.Text}
			}
		}
	}
	if err != nil {
		w.close()
		return nil, t.refuseOrFail(w, err)
	}
	_, laddr := infoFields(results[2].reply.Text)
	t.notePrimary(laddr)
	w.last.Store(monoNow())
	return t.install(w)
}

// refuseOrFail turns an open failure into its error: a server's error
// reply (not one saying "not now") is a refusal remembered for the node.
func (t *Transport) refuseOrFail(w *watcher, err error) error {
	var se *serverError
	if !errors.As(err, &se) && !errors.Is(err, errResp2) {
		return &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: w.node, Err: err}
	}
	if se != nil && conn.IsDidNotRunReply(se.text) {
		return &conn.Error{Class: conn.Definite, Op: "watch", Addr: w.node, Err: fmt.Errorf("%w: %s", conn.ErrDidNotRun, se.text)}
	}
	why := fmt.Errorf("%w: %w", conn.ErrTrackingRefused, err)
	cur, _ := t.current(w.node)
	t.watch.mu.Lock()
	if t.watch.refused == nil {
		t.watch.refused = map[string]refusal{}
	}
	t.watch.refused[w.node] = refusal{err: why, session: cur}
	t.watch.mu.Unlock()
	return &conn.Error{Class: conn.Definite, Op: "watch", Addr: w.node, Err: why}
}

// pend records w as opening, so that Close closes its clients too (an
// open on a frozen server would otherwise hold Close until its deadline);
// false once Close has begun.
func (t *Transport) pend(w *watcher) bool {
	t.watch.mu.Lock()
	defer t.watch.mu.Unlock()
	if t.watch.closed {
		return false
	}
	if t.watch.pending == nil {
		t.watch.pending = map[*watcher]struct{}{}
	}
	t.watch.pending[w] = struct{}{}
	return true
}

// unpend forgets w as opening.
func (t *Transport) unpend(w *watcher) {
	t.watch.mu.Lock()
	delete(t.watch.pending, w)
	t.watch.mu.Unlock()
}

// install makes w its node's watcher and starts its goroutines, and
// returns it. w counts as served from then on: it was opened for a read,
// and its end, however soon, must be told, as a read handed a watcher that
// had already ended untold would track keys whose changes nobody hears of.
// A node keeps one watcher: if it has a live one already (opened for a
// caller that looked before it was installed and whose open began after
// that one's ended), w is closed and that one returned, never replaced (a
// replaced watcher was closed by nobody and held Close).
func (t *Transport) install(w *watcher) (*watcher, error) {
	t.watch.mu.Lock()
	defer t.watch.mu.Unlock()
	if t.watch.closed {
		w.ended.Store(true)
		w.close()
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "watch", Addr: w.node, Err: conn.ErrPoolClosed}
	}
	if cur := t.watch.watchers[w.node]; cur != nil && !cur.ended.Load() {
		w.ended.Store(true)
		w.close()
		return cur, nil
	}
	if t.watch.watchers == nil {
		t.watch.watchers = map[string]*watcher{}
	}
	t.watch.watchers[w.node] = w
	w.served = true
	t.running.Go(w.receive)
	t.running.Go(w.keepAlive)
	return w, nil
}

// errResp2: the listener speaks RESP2, which carries no pushes.
var errResp2 = errors.New("the listener connection speaks RESP2 (resp=2): no invalidation pushes")

// privateOptions returns a copy of opts (the node client's: same address
// or dialer, credentials, TLS, timeouts, the user's OnConnect) for a
// private client of one connection. Every field whose copy would not mean
// what a watcher's connection needs is set explicitly (Options() holds
// normalised values, and pointers shared with the user's client: its push
// processor, its caches).
func privateOptions(opts *redis.Options) *redis.Options {
	o := *opts
	o.MaxRetries, o.Limiter = -1, nil
	o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 1, 0, 0, 1
	o.PipelinePoolSize, o.PipelineReadBufferSize, o.PipelineWriteBufferSize, o.AutoPipelineOptions = 0, 0, 0, nil
	o.PushNotificationProcessor = nil // a fresh one; never the user's client's
	o.ClientSideCacheConfig, o.ClientSideCache, o.ClientSideCacheStrategy = nil, nil, 0
	o.ClientSideCacheRefreshOnInvalidate, o.ClientSideCacheCoalesceMisses, o.ClientSideCacheInvalidationBatchWindow = false, false, 0
	o.ConnMaxIdleTime, o.ConnMaxLifetime, o.ConnMaxLifetimeJitter = -1, 0, 0
	// Its own maintenance-notification config, off: the copy's pointer is
	// the user's client's, which go-redis writes when a server refuses
	// the handshake (auto mode).
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return &o
}

// hello is what the listener's OnConnect learned: its CLIENT ID and its
// CLIENT INFO (for its protocol).
type hello struct {
	id   int64
	resp string
	err  error
}

// newWatcher returns node's watcher, not yet open: its two private clients
// (privateOptions of opts, the node client's; the listener's RESP3, with
// an OnConnect learning the connection's CLIENT ID and protocol after the
// user's). It sends nothing.
func newWatcher(t *Transport, node string, opts *redis.Options) *watcher {
	w := &watcher{t: t, node: node, quit: make(chan struct{}), turn: make(chan struct{}, 1), hello: make(chan hello, 4)}
	o := privateOptions(opts)
	user := opts.OnConnect
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if user != nil {
			if err := user(ctx, cn); err != nil {
				return err
			}
		}
		var wt witness
		wt.install(cn)
		rs, err := wt.roundTrip(ctx, cn, []conn.Command{conn.ClientIDCommand(), conn.ClientInfoCommand()})
		h := hello{err: err}
		if err == nil {
			h.id, h.resp = rs[0].reply.Int, rs[1].reply.Text
			if rs[0].reply.Kind != conn.ReplyInt {
				h.err = replyError(rs[0].reply)
			}
		}
		select {
		case w.hello <- h:
		default:
		}
		return nil
	}
	o.Protocol = 3
	o.Dialer = w.sockets.record(o.Dialer)
	w.listener = redis.NewClient(o)
	ro := privateOptions(opts)
	ro.Dialer = w.sockets.record(ro.Dialer)
	w.readers = redis.NewClient(ro)
	return w
}

// sockets are the sockets of a watcher's private clients, recorded as
// they are dialled so that closing the watcher closes them all, one still
// in go-redis' handshake included (it is in no pool yet, so no client's
// Close would reach it).
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
			return nil, errWatcherEnded
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

// listen opens the listener: a PubSub on the listener's client whose
// blocking read is the listener. It returns the listener's CLIENT ID.
func (w *watcher) listen(ctx context.Context) (int64, error) {
	if err := w.listener.RegisterPushNotificationHandler("invalidate", invalidateHandler{w}, true); err != nil {
		return 0, err
	}
	w.sub = w.listener.Subscribe(ctx)       // no channel
	if err := w.sub.Ping(ctx); err != nil { // opens the connection (OnConnect runs); its PONG is read by receive
		return 0, err
	}
	select {
	case h := <-w.hello:
		if h.err != nil {
			return 0, h.err
		}
		if slices.Contains(strings.Fields(h.resp), "resp=2") {
			return 0, errResp2
		}
		return h.id, nil
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
}

// TrackingRefused reports whether node refused tracking to its current
// session (see conn.ErrTrackingRefused), as conn.Pool's TrackingRefused
// does; it sends nothing and is safe for concurrent use.
func (t *Transport) TrackingRefused(node string) bool {
	cur, _ := t.current(node)
	t.watch.mu.Lock()
	defer t.watch.mu.Unlock()
	r, ok := t.watch.refused[node]
	return ok && r.session == cur
}
