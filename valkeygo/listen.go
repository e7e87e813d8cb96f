package valkeygo

import (
	"context"
	"sync/atomic"

	"github.com/valkey-io/valkey-go"

	"github.com/respire-go/respire/conn"
)

// Listen implements conn.Client: a dedicated client of node (see Dial)
// whose RESP3 invalidation pushes valkey-go hands to fn.
// SetOnInvalidations moves the socket to valkey-go's background mode,
// where pushes are read while the connection also carries the watcher's
// reads: the Listener is its own Conn, and the channel it returns is its
// death watch. valkey-go calls the hook with nil when the connection ends
// and for a null invalidation (FLUSHALL); fn gets nil then — but never
// after the Listener's Close, which ends the connection too.
func (c *Client) Listen(ctx context.Context, node string, fn func(keys []string)) (conn.Listener, error) {
	d, err := c.dedicate(ctx, node)
	if err != nil {
		return nil, err
	}
	l := &listener{vconn: vconn{d: d}}
	l.background.Store(true)
	l.watchOnce.Do(func() {
		ch := d.SetOnInvalidations(func(msgs []valkey.ValkeyMessage) {
			if !l.closing.Load() {
				fn(keysOf(msgs))
			}
		})
		l.dead.Store(&ch)
	})
	return l, nil
}

// keysOf returns the keys of an invalidation (nil for a null one).
func keysOf(msgs []valkey.ValkeyMessage) []string {
	if msgs == nil {
		return nil
	}
	keys := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if k, err := m.ToString(); err == nil {
			keys = append(keys, k)
		}
	}
	return keys
}

// listener is a Listener whose connection also carries commands.
type listener struct {
	vconn
	closing atomic.Bool // Close was called: fn is not called any more
}

// Conn implements conn.Listener: the listening connection itself.
func (l *listener) Conn() conn.Conn { return &l.vconn }

// ID implements conn.Listener: 0, the engine does not redirect.
func (l *listener) ID() int64 { return 0 }

// Close implements conn.Listener: fn is not called any more, and the
// connection closes (see vconn.Close).
func (l *listener) Close() {
	l.closing.Store(true)
	l.vconn.Close()
}
