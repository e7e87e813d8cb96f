package rueidislease

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
)

// rconn is conn.Conn over one rueidis dedicated client: one socket,
// pipelined (concurrent callers' commands share its writes), never
// re-sending a command (none is marked retryable). Safe for concurrent
// use.
type rconn struct {
	d rueidis.DedicatedClient

	background atomic.Bool                  // the socket runs in rueidis' background mode (see sendContext)
	watchOnce  sync.Once                    // the death watch was set up
	dead       atomic.Pointer[<-chan error] // closes when the socket breaks (see watchDeath)
	deadErr    atomic.Pointer[error]        // what the death watch received
	closeOnce  sync.Once
}

// Pipelined implements conn.Conn: rueidis pipelines a dedicated client's
// concurrent callers on its socket.
func (c *rconn) Pipelined() bool { return true }

// WritesPerCaller implements conn.PerCallerWriter: the client's writer
// flushes whenever its queue is empty, so the engine drains a session's
// concurrent callers into one pipeline per round trip.
func (c *rconn) WritesPerCaller() bool { return true }

// Do implements conn.Conn: one Do or DoMulti of the dedicated client.
func (c *rconn) Do(ctx context.Context, cmds []conn.Command, replies []conn.Reply) error {
	sendCtx, sent := c.sendContext(ctx)
	defer sent()
	if len(cmds) == 1 {
		return read(c.d.Do(sendCtx, c.build(cmds[0])), &replies[0])
	}
	built := make([]rueidis.Completed, len(cmds))
	for i, cmd := range cmds {
		built[i] = c.build(cmd)
	}
	for i, r := range c.d.DoMulti(sendCtx, built...) {
		if err := read(r, &replies[i]); err != nil {
			return err
		}
	}
	return nil
}

// build builds cmd without marking a key: the socket is pinned to one
// node, so rueidis needs no hash slot (a CRC16 per command saved).
func (c *rconn) build(cmd conn.Command) rueidis.Completed {
	return c.d.B().Arbitrary(cmd.Args...).Build()
}

// read converts one rueidis result into reply, or returns its transport
// error: wrapped with conn.ErrNotWritten only for the two errors rueidis
// returns before any write — ErrDedicatedClientRecycled and a dial failure.
func read(r rueidis.RedisResult, reply *conn.Reply) error {
	if err := r.NonRedisError(); err != nil {
		return transportError(err)
	}
	msg, err := r.ToMessage()
	*reply = toReply(&msg, err)
	return nil
}

// transportError is err, a rueidis transport error, wrapped with
// conn.ErrNotWritten when it proves no byte was written: as tried over real
// sockets with rueidis v1.0.79, only ErrDedicatedClientRecycled (checked
// before any write) and a dial failure (no connection existed for that
// attempt) do. Everything else — ErrClosing, io.EOF, resets, "use of closed
// network connection", i/o timeouts, ctx errors — comes back also for
// commands that were written and even executed (a socket closed locally
// answers the commands still waiting on it with ErrClosing although they
// may have run).
func transportError(err error) error {
	var op *net.OpError
	if errors.Is(err, rueidis.ErrDedicatedClientRecycled) || (errors.As(err, &op) && op.Op == "dial") {
		return fmt.Errorf("%w: %w", conn.ErrNotWritten, err)
	}
	return err
}

// toReply converts a rueidis message (no transport error) to the engine's
// Reply, keeping the server's whole error text (rueidis strips "ERR " from
// RedisError.Error(); the message keeps it) and rueidis' *RedisError.
func toReply(msg *rueidis.RedisMessage, err error) conn.Reply {
	switch {
	case msg.IsNil():
		return conn.Reply{Kind: conn.ReplyNil}
	case err != nil:
		text, _ := msg.ToString()
		return conn.Reply{Kind: conn.ReplyError, Text: text, Err: err}
	case msg.IsInt64():
		n, _ := msg.AsInt64()
		return conn.Reply{Kind: conn.ReplyInt, Int: n}
	case msg.IsString():
		text, _ := msg.ToString()
		return conn.Reply{Kind: conn.ReplyBulk, Text: text}
	case msg.IsBool():
		if b, _ := msg.AsBool(); b {
			return conn.Reply{Kind: conn.ReplyInt, Int: 1}
		}
		return conn.Reply{Kind: conn.ReplyNil}
	case msg.IsArray():
		elems, _ := msg.ToArray()
		return conn.Reply{Kind: conn.ReplyArray, Array: toReplies(elems)}
	case msg.IsMap():
		m, _ := msg.ToMap()
		arr := make([]conn.Reply, 0, 2*len(m))
		for k, v := range m {
			arr = append(arr, conn.Reply{Kind: conn.ReplyBulk, Text: k}, toReply(&v, v.Error()))
		}
		return conn.Reply{Kind: conn.ReplyArray, Array: arr}
	}
	text, _ := msg.ToString() // verbatim strings (CLIENT INFO on RESP3), doubles, big numbers
	return conn.Reply{Kind: conn.ReplyBulk, Text: text}
}

// toReplies converts an array's elements.
func toReplies(elems []rueidis.RedisMessage) []conn.Reply {
	out := make([]conn.Reply, len(elems))
	for i := range elems {
		out[i] = toReply(&elems[i], elems[i].Error())
	}
	return out
}

// Err implements conn.Conn: the error the death watch received once the
// socket broke; nil while it looks alive or is not watched (a socket in
// rueidis' synchronous mode reads nothing between commands: the engine's
// idle PING covers it).
func (c *rconn) Err() error {
	if p := c.deadErr.Load(); p != nil {
		return *p
	}
	dead := c.dead.Load()
	if dead == nil {
		return nil
	}
	select {
	case err, ok := <-*dead:
		if !ok || err == nil {
			err = rueidis.ErrClosing
		}
		c.deadErr.CompareAndSwap(nil, &err)
		return *c.deadErr.Load()
	default:
		return nil
	}
}

// Close implements conn.Conn: the dedicated client is closed (rueidis
// answers what is still waiting on it with ErrClosing once it drained, at
// most about a second).
func (c *rconn) Close() { c.closeOnce.Do(c.d.Close) }

// sendContext returns the ctx to hand to rueidis for one call and a
// function to call once it returned. rueidis runs a lone command
// synchronously on the socket when ctx has a deadline, and then does not
// notice a cancellation before that deadline (and closes the socket at the
// deadline); a call must return at once when its ctx ends (conn.Conn's
// contract). So a call whose ctx has a deadline runs on a copy without one,
// cancelled when ctx ends, until such a call has moved the socket to
// rueidis' background mode, which lasts for the socket's life: every later
// command is queued there and sees its ctx's cancellation. A ctx that
// cannot be cancelled (context.Background()) keeps the synchronous path
// while no cancellable ctx has been used.
func (c *rconn) sendContext(ctx context.Context) (context.Context, func()) {
	if ctx.Done() == nil || c.background.Load() {
		return ctx, func() {}
	}
	if _, ok := ctx.Deadline(); !ok {
		return ctx, c.inBackground
	}
	inner, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return inner, func() {
		stop()
		cancel(nil)
		c.inBackground()
	}
}

// inBackground records that the socket runs in rueidis' background mode
// and starts watching it for death: rueidis' background reader notices at
// once when the server closes the socket (failover, CLIENT KILL, timeout),
// and Err reports it before the next command is written.
func (c *rconn) inBackground() {
	c.background.Store(true)
	c.watchOnce.Do(func() {
		ch := c.d.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: func(rueidis.PubSubMessage) {}})
		c.dead.Store(&ch)
	})
}

// The adapter's connections are conn.Conns.
var _ conn.Conn = (*rconn)(nil)
