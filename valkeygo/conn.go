package valkeygo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/valkey-io/valkey-go"

	"github.com/respire-go/respire/conn"
)

// vconn is conn.Conn over one valkey-go dedicated client: one socket,
// pipelined (concurrent callers' commands share its writes), never
// re-sending a command (none is marked retryable). Safe for concurrent
// use.
type vconn struct {
	d valkey.DedicatedClient

	closed     atomic.Bool                  // Close was called: nothing more is handed to d
	background atomic.Bool                  // the socket runs in valkey-go's background mode (see sendContext)
	watchOnce  sync.Once                    // the death watch was set up
	dead       atomic.Pointer[<-chan error] // closes when the socket breaks (see watchDeath)
	deadErr    atomic.Pointer[error]        // what the death watch received
	closeOnce  sync.Once
}

// Pipelined implements conn.Conn: valkey-go pipelines a dedicated client's
// concurrent callers on its socket.
func (c *vconn) Pipelined() bool { return true }

// WritesPerCaller implements conn.PerCallerWriter: the client's writer
// flushes whenever its queue is empty, so the engine drains a session's
// concurrent callers into one pipeline per round trip.
func (c *vconn) WritesPerCaller() bool { return true }

// Do implements conn.Conn: one Do or DoMulti of the dedicated client. A
// call after Close is refused before it reaches valkey-go.
func (c *vconn) Do(ctx context.Context, cmds []conn.Command, replies []conn.Reply) error {
	if c.closed.Load() {
		return fmt.Errorf("%w: %w", conn.ErrNotWritten, valkey.ErrDedicatedClientRecycled)
	}
	sendCtx, sent := c.sendContext(ctx)
	defer sent()
	if len(cmds) == 1 {
		return read(c.d.Do(sendCtx, c.build(cmds[0])), &replies[0])
	}
	built := make([]valkey.Completed, len(cmds))
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
// node, so valkey-go needs no hash slot (a CRC16 per command saved).
func (c *vconn) build(cmd conn.Command) valkey.Completed {
	return c.d.B().Arbitrary(cmd.Args...).Build()
}

// read converts one valkey-go result into reply, or returns its transport
// error (see transportError).
func read(r valkey.ValkeyResult, reply *conn.Reply) error {
	if err := r.NonValkeyError(); err != nil {
		return transportError(err)
	}
	msg, err := r.ToMessage()
	*reply = toReply(&msg, err)
	return nil
}

// transportError is err, a valkey-go transport error on a dedicated
// client that answered its probe (see Client.dedicate), wrapped with
// conn.ErrNotWritten when it proves no byte was written: only
// ErrDedicatedClientRecycled does (checked before any write, once the
// client was closed). Everything else — ErrClosing, io.EOF, resets, "use
// of closed network connection", i/o timeouts, ctx errors — comes back
// also for commands that were written and even executed: a socket closed
// locally answers the commands still waiting on it with ErrClosing or the
// read's error although they may have run. (A dial failure, which proves
// it too, never reaches a command: Dial fails instead.)
func transportError(err error) error {
	if errors.Is(err, valkey.ErrDedicatedClientRecycled) {
		return fmt.Errorf("%w: %w", conn.ErrNotWritten, err)
	}
	return err
}

// toReply converts a valkey-go message (no transport error) to the
// engine's Reply, keeping the server's whole error text (valkey-go strips
// "ERR " from ValkeyError.Error(); the message keeps it) and valkey-go's
// *ValkeyError.
func toReply(msg *valkey.ValkeyMessage, err error) conn.Reply {
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
		out := make([]conn.Reply, len(elems))
		for i := range elems {
			out[i] = toReply(&elems[i], elems[i].Error())
		}
		return conn.Reply{Kind: conn.ReplyArray, Array: out}
	case msg.IsMap():
		return mapReply(msg)
	}
	// Doubles, big numbers (digits) and verbatim strings, whose text
	// valkey-go keeps behind their format ("txt:" for CLIENT INFO on RESP3).
	text, _ := msg.ToString()
	if !msg.IsFloat64() && len(text) >= 4 && text[3] == ':' {
		text = text[4:]
	}
	return conn.Reply{Kind: conn.ReplyBulk, Text: text}
}

// mapReply flattens a RESP3 map into k, v, k, v, in key order.
func mapReply(msg *valkey.ValkeyMessage) conn.Reply {
	m, _ := msg.ToMap()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	arr := make([]conn.Reply, 0, 2*len(m))
	for _, k := range keys {
		v := m[k]
		arr = append(arr, conn.Reply{Kind: conn.ReplyBulk, Text: k}, toReply(&v, v.Error()))
	}
	return conn.Reply{Kind: conn.ReplyArray, Array: arr}
}

// Err implements conn.Conn: the error the death watch received once the
// socket broke; nil while it looks alive or is not watched (a socket in
// valkey-go's synchronous mode reads nothing between commands: the
// engine's idle PING covers it).
func (c *vconn) Err() error {
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
			err = valkey.ErrClosing
		}
		c.deadErr.CompareAndSwap(nil, &err)
		return *c.deadErr.Load()
	default:
		return nil
	}
}

// Close implements conn.Conn: the dedicated client is closed (valkey-go
// answers what is still waiting on it with ErrClosing once it drained, at
// most about a second) and released; its later calls are refused.
func (c *vconn) Close() {
	c.closed.Store(true)
	c.closeOnce.Do(c.d.Close)
}

// sendContext returns the ctx to hand to valkey-go for one call and a
// function to call once it returned. valkey-go runs a lone command
// synchronously on the socket when ctx has a deadline, and then does not
// notice a cancellation before that deadline (and closes the socket at the
// deadline); a call must return at once when its ctx ends (conn.Conn's
// contract). So a call whose ctx has a deadline runs on a copy without one,
// cancelled when ctx ends, until such a call has moved the socket to
// valkey-go's background mode, which lasts for the socket's life: every
// later command is queued there and sees its ctx's cancellation. A ctx
// that cannot be cancelled (context.Background()) keeps the synchronous
// path while no cancellable ctx has been used.
func (c *vconn) sendContext(ctx context.Context) (context.Context, func()) {
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

// inBackground records that the socket runs in valkey-go's background mode
// and starts watching it for death: valkey-go's background reader notices
// at once when the server closes the socket (failover, CLIENT KILL,
// timeout), and Err reports it before the next command is written.
func (c *vconn) inBackground() {
	c.background.Store(true)
	c.watchOnce.Do(func() {
		ch := c.d.SetPubSubHooks(valkey.PubSubHooks{OnMessage: func(valkey.PubSubMessage) {}})
		c.dead.Store(&ch)
	})
}

// The adapter's connections are conn.Conns.
var _ conn.Conn = (*vconn)(nil)
