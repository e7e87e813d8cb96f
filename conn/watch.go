package conn

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// This file is the push half of conn: one watcher connection per node with
// RESP3 client-side tracking (CLIENT TRACKING ON OPTIN NOLOOP), on which
// WatchRead arms the tracking of one key (CLIENT CACHING YES + GET) and
// reads its owner token in the same round trip (WatchReadMany, in
// watch_batch.go, does so for many keys, one round trip per node). The
// server then sends one invalidation push when the key next changes —
// deleted, expired, written, PEXPIREd — and the pool hands the key to the
// handler set with SetInvalidationHandler. Tracking is one-shot per read:
// after a push the key is tracked again only by the next WatchRead. A
// watcher only reads; it never carries a lock command, so nothing it does
// can change a lock.

// ErrTrackingRefused is the cause of WatchRead's error when the node will
// not deliver invalidations to this client: CLIENT TRACKING or CLIENT
// CACHING got an error reply (NOPERM, an unknown subcommand behind a
// proxy), or the connection speaks RESP2 (no pushes without a redirect).
// It is remembered for the node while the node's current session lasts
// (capabilities are learned per physical connection): callers poll instead.
var ErrTrackingRefused = errors.New("client-side tracking refused")

// TrackingOnCommand turns tracking on for the watcher: OPTIN (only reads
// after CLIENT CACHING YES are tracked) and NOLOOP.
func TrackingOnCommand() Command {
	return Command{Args: []string{"CLIENT", "TRACKING", "ON", "OPTIN", "NOLOOP"}, Key: -1}
}

// TrackingOffCommand turns tracking off (rueidis may have turned it on with
// other options; modes cannot be switched without OFF first).
func TrackingOffCommand() Command {
	return Command{Args: []string{"CLIENT", "TRACKING", "OFF"}, Key: -1}
}

// CachingYesCommand makes the next read of an OPTIN connection tracked.
func CachingYesCommand() Command {
	return Command{Args: []string{"CLIENT", "CACHING", "YES"}, Key: -1}
}

// watchState is the pool's watchers, one per node, and what nodes refused.
type watchState struct {
	mu       sync.Mutex
	handler  func(node string, keys []string)
	watchers map[string]*watcher
	refused  map[string]refusal // node → its refusal, while the connection it was learned with lasts
	closed   bool
}

// refusal is a node's refusal of tracking, learned while session was the
// node's current session (nil: none was open). Capabilities are learned per
// physical connection: once that session is retired (a failover, a reset, a
// fence) the server behind the address may be another, and the next read
// asks again.
type refusal struct {
	err     error
	session *pinned
}

// refusedNow returns node's refusal if it still holds: cur, the node's
// current session, is the one it was learned with. p.watch.mu is held.
func (p *Pool) refusedNow(node string, cur *pinned) error {
	r, ok := p.watch.refused[node]
	if !ok {
		return nil
	}
	if r.session != cur {
		delete(p.watch.refused, node)
		return nil
	}
	return r.err
}

// currentSession returns node's current session, or nil; it sends nothing.
func (p *Pool) currentSession(node string) *pinned {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[node]
}

// watcher is one tracking connection to one node.
type watcher struct {
	node    string
	client  rueidis.DedicatedClient
	dead    atomic.Bool // the socket broke or was closed: open a fresh one
	closing atomic.Bool // retired (retireWatcher): its last nil push means nothing
	served  bool        // it was made its node's watcher, so reads may have tracked keys on it; under watch.mu
}

// SetInvalidationHandler sets fn to receive the keys whose tracking ended
// on node: a change or expiry of keys (on the watcher's reader goroutine),
// or everything tracked there (keys nil: nothing is tracked any more, read
// again) whenever a watcher that served reads ends, for whatever reason —
// a FLUSHALL, its connection broke or failed under a read, an error reply
// to CLIENT CACHING (a refusal, or BUSY, LOADING, MASTERDOWN…), a Sentinel
// failover — and when a slot of node moved away. A nil call made because
// a read ended the watcher comes on that read's goroutine before the read
// returns. Only Pool.Close ends watchers silently. fn must not block, and
// may be called concurrently. Set it before the first WatchRead.
func (p *Pool) SetInvalidationHandler(fn func(node string, keys []string)) {
	p.watch.mu.Lock()
	p.watch.handler = fn
	p.watch.mu.Unlock()
}

// WatchRead tracks key on the watcher of its primary and reads it there in
// one round trip (CLIENT CACHING YES + GET): it returns the node, the owner
// token and whether the key exists. From the server's answer on, any change
// of the key sends one invalidation to the handler. MOVED is followed (the
// slot map learns it). It blocks for the round trip, and the first time per
// node for the watcher's handshake. An error matching ErrTrackingRefused
// means the node will not push; other errors are worth another try later.
// It is WatchReadMany of one key.
func (p *Pool) WatchRead(ctx context.Context, key string) (node string, token string, found bool, err error) {
	var one [1]WatchReadResult
	r := p.WatchReadMany(ctx, []string{key}, one[:0])[0]
	return r.Node, r.Token, r.Found, r.Err
}

// watcherFor returns node's live watcher, opening one (once at a time per
// node) when there is none.
func (p *Pool) watcherFor(ctx context.Context, node string) (*watcher, error) {
	for {
		cur := p.currentSession(node)
		p.watch.mu.Lock()
		if p.watch.closed {
			p.watch.mu.Unlock()
			return nil, &Error{Class: NotSubmitted, Op: "watch", Addr: node, Err: ErrPoolClosed}
		}
		if why := p.refusedNow(node, cur); why != nil {
			p.watch.mu.Unlock()
			return nil, &Error{Class: Definite, Op: "watch", Addr: node, Err: why}
		}
		if w := p.watch.watchers[node]; w != nil && !w.dead.Load() {
			p.watch.mu.Unlock()
			return w, nil
		}
		p.watch.mu.Unlock()
		opened := p.opening.DoChan("watch "+node, func() (any, error) { return p.openWatcher(ctx, node) })
		select {
		case r := <-opened:
			if r.Err != nil {
				if ctx.Err() == nil && errors.Is(r.Err, context.Canceled) {
					continue // the caller that led the open gave up; ours is live
				}
				return nil, r.Err
			}
			return r.Val.(*watcher), nil
		case <-ctx.Done():
			return nil, &Error{Class: NotSubmitted, Op: "watch", Addr: node, Err: context.Cause(ctx)}
		}
	}
}
