package rueidislease

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
)

// Listen implements conn.Client: a dedicated client of node whose RESP3
// invalidation pushes rueidis hands to fn (SetOnInvalidations moves the
// socket to rueidis' background mode, where pushes are read while the
// connection also carries the watcher's reads: the Listener is its own
// Conn). rueidis calls the hook with nil when the connection ends and for
// a null invalidation (FLUSHALL); fn gets nil then.
func (c *Client) Listen(ctx context.Context, node string, fn func(keys []string)) (conn.Listener, error) {
	nc, err := c.nodeClient(ctx, node)
	if err != nil {
		return nil, err
	}
	d, _ := nc.Dedicate()
	l := &listener{rconn{d: d}}
	l.background.Store(true) // the hook below moves the socket to background mode
	_ = d.SetOnInvalidations(func(msgs []rueidis.RedisMessage) { fn(keysOf(msgs)) })
	return l, nil
}

// keysOf returns the keys of an invalidation (nil for a null one).
func keysOf(msgs []rueidis.RedisMessage) []string {
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
type listener struct{ rconn }

// Conn implements conn.Listener: the listening connection itself.
func (l *listener) Conn() conn.Conn { return &l.rconn }

// ID implements conn.Listener: 0, the engine does not redirect.
func (l *listener) ID() int64 { return 0 }
