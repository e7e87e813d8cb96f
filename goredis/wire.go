package goredis

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// Errors of a round trip that a user's hook did not hand to go-redis as
// built.
var (
	// errNotHandedOff: a user hook returned without calling next, so
	// nothing reached go-redis (go-redis runs next synchronously).
	errNotHandedOff = errors.New("a go-redis hook returned without sending the commands")
	// errHookAltered: a user hook called next more than once, or with
	// other commands or arguments: what was sent is unknown.
	errHookAltered = errors.New("a go-redis hook re-sent or altered the commands")
)

// wireCmd is one command as handed to go-redis: its NoRetry is true, so
// go-redis re-sends neither it nor a pipeline holding it, whatever
// MaxRetries says (rule GoRedisRetriesOff). go-redis gets *string copies
// (text) of the arguments and the witness compares them with want, so that
// a hook that rewrote one, in place or by replacing it, is seen. The first
// command of a round trip has the witness' firstArg as its name.
type wireCmd struct {
	redis.Cmd
	want, text []string
	strs       [2 * inlineArgs]string
	args       [inlineArgs]any
}

// inlineArgs is how many arguments a wireCmd holds without another
// allocation (SET key token IFEQ token PX ms is 7).
const inlineArgs = 8

// newWireCmd builds the go-redis command of args; first, when not nil,
// stands for the name.
func newWireCmd(ctx context.Context, args []string, first *firstArg) *wireCmd {
	wc := &wireCmd{}
	n, strs, boxes := len(args), wc.strs[:0], wc.args[:0]
	if n > inlineArgs {
		strs, boxes = make([]string, 0, 2*n), make([]any, 0, n)
	}
	strs = append(append(strs, args...), args...)
	wc.want, wc.text = strs[:n:n], strs[n:]
	for i := range wc.text {
		boxes = append(boxes, &wc.text[i])
	}
	if first != nil {
		first.name, boxes[0] = args[0], first
	}
	wc.Cmd = *redis.NewCmd(ctx, boxes...)
	return wc
}

// NoRetry reports true: go-redis never re-sends the command.
func (*wireCmd) NoRetry() bool { return true }

// unaltered reports whether the arguments go-redis is about to write are
// the ones built (first: the round trip's firstArg, or nil).
func (wc *wireCmd) unaltered(first *firstArg) bool {
	args := wc.Args()
	if len(args) != len(wc.want) {
		return false
	}
	for j, a := range args {
		if j == 0 && first != nil {
			if a != any(first) || first.name != wc.want[0] {
				return false
			}
		} else if p, ok := a.(*string); !ok || p != &wc.text[j] || *p != wc.want[j] {
			return false
		}
	}
	return true
}

// firstArg is the name of a round trip's first command as go-redis is
// given it. go-redis' writer calls MarshalBinary when it writes that
// argument into the connection's buffer, which it flushes only once every
// command of the round trip is in it (New refuses a buffer under 64
// bytes, so the command's header stays in it too). So a round trip whose
// firstArg was never marshalled wrote nothing to the socket: the fact
// behind conn.ErrNotWritten (rule GoRedisNotWrittenIsProved).
type firstArg struct {
	name    string
	written bool
	buf     []byte
}

// MarshalBinary records that go-redis writes the round trip.
func (f *firstArg) MarshalBinary() ([]byte, error) {
	f.written = true
	f.buf = append(f.buf[:0], f.name...)
	return f.buf, nil
}

// String is the name, which go-redis' Cmd.Name (and a tracing hook) reads.
func (f *firstArg) String() string { return f.name }

// witness is every adapter Conn's innermost hook: it sees what go-redis
// wrote and read before any hook of the user's can rewrite it (rule
// GoRedisHooksCannotRewrite). One round trip at a time uses a Conn.
type witness struct {
	first  firstArg
	wire   []*wireCmd
	calls  int  // how often next was called with our commands
	moved  bool // they were altered on the way
	record []result
	one    [1]redis.Cmder
}

// result is what go-redis read for one command: a reply, or the error
// that left it without one.
type result struct {
	reply     conn.Reply
	transport error
}

// prepare builds the round trip of cmds (the arguments copied: the
// caller's may be reused once Do returned).
func (w *witness) prepare(ctx context.Context, cmds []conn.Command) {
	w.calls, w.moved, w.first.written, w.record = 0, false, false, w.record[:0]
	for i, c := range cmds {
		first := &w.first
		if i > 0 {
			first = nil
		}
		w.wire = append(w.wire, newWireCmd(ctx, c.Args, first))
	}
}

// send sends the prepared round trip on rc, one command with Process,
// several in a pipeline, and records what go-redis read. It returns when
// go-redis does: at a deadline (ctx's with ContextTimeoutEnabled, or its
// timeouts), never at a bare cancellation.
func (w *witness) send(ctx context.Context, rc *redis.Conn) {
	if len(w.wire) == 1 {
		_ = rc.Process(ctx, w.wire[0])
	} else {
		pipe := rc.Pipeline()
		for _, wc := range w.wire {
			_ = pipe.Process(ctx, wc)
		}
		_, _ = pipe.Exec(ctx)
	}
	clear(w.wire) // they hold the caller's ctx
	w.wire, w.one[0] = w.wire[:0], nil
}

// outcome classifies the round trip just made. notWritten: nothing reached
// the socket — go-redis got the commands as built, or none, and never
// wrote the first name — with the error that stopped it. Otherwise err is
// nil when every command got its reply, or what left one without.
func (w *witness) outcome(n int) (notWritten bool, err error) {
	switch {
	case w.moved:
		return false, errHookAltered
	case !w.first.written:
		for _, r := range w.record {
			if r.transport != nil {
				return true, r.transport
			}
			if r.reply.Kind == conn.ReplyError { // the answer to go-redis' handshake
				return true, r.reply.Err
			}
		}
		return true, errNotHandedOff
	case w.calls != 1 || len(w.record) != n:
		return false, errHookAltered
	}
	for _, r := range w.record {
		if r.transport != nil {
			return false, r.transport
		}
	}
	return false, nil
}

// ours reports whether cmds are the round trip's commands, unaltered.
func (w *witness) ours(cmds []redis.Cmder) bool {
	if len(cmds) != len(w.wire) {
		return false
	}
	for i, c := range cmds {
		first := &w.first
		if i > 0 {
			first = nil
		}
		if c != redis.Cmder(w.wire[i]) || !w.wire[i].unaltered(first) {
			return false
		}
	}
	return true
}

// hook passes next the commands, recording what it did with ours.
func (w *witness) hook(cmds []redis.Cmder, next func() error) error {
	w.calls++
	if w.calls > 1 || !w.ours(cmds) {
		w.moved = true
		return next()
	}
	err := next()
	for _, c := range cmds {
		if len(cmds) == 1 { // Process: go-redis sets the error once every hook returned
			w.record = append(w.record, resultOf(err, w.wire[0].Val()))
		} else {
			w.record = append(w.record, resultOf(c.Err(), c.(*wireCmd).Val()))
		}
	}
	return err
}

// witnessHook is the witness as a redis.Hook, added to each Conn last, so
// that go-redis runs it closest to the socket.
type witnessHook struct{ w *witness }

// DialHook lets dials pass.
func (h witnessHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook and ProcessPipelineHook let commands that are none of the
// adapter's (go-redis' own handshake on a new connection) pass.
func (h witnessHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if _, mine := cmd.(*wireCmd); !mine {
			return next(ctx, cmd)
		}
		h.w.one[0] = cmd
		return h.w.hook(h.w.one[:], func() error { return next(ctx, cmd) })
	}
}

func (h witnessHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 {
			return next(ctx, cmds)
		}
		if _, mine := cmds[0].(*wireCmd); !mine {
			return next(ctx, cmds)
		}
		return h.w.hook(cmds, func() error { return next(ctx, cmds) })
	}
}

// resultOf converts one command's outcome as go-redis read it: a server
// error reply keeps its whole text and go-redis' error value, redis.Nil is
// the nil reply, any other error is a transport error.
func resultOf(err error, val any) result {
	switch {
	case err == nil:
		return result{reply: replyOf(val)}
	case errors.Is(err, redis.Nil):
		return result{reply: conn.Reply{Kind: conn.ReplyNil}}
	case isServerError(err):
		return result{reply: conn.Reply{Kind: conn.ReplyError, Text: err.Error(), Err: err}}
	}
	return result{transport: err}
}

// isServerError tells a server's error reply from a transport error. It is
// apart from resultOf because the targets of errors.As escape: in resultOf
// they would cost two allocations on every reply, errors or not.
func isServerError(err error) bool {
	var re redis.Error
	var ne net.Error
	return errors.As(err, &re) && !errors.As(err, &ne)
}

// replyOf maps a value go-redis read onto conn's reply kinds (RESP3 maps
// flattened key, value…; doubles and big numbers as text).
func replyOf(val any) conn.Reply {
	switch v := val.(type) {
	case nil:
		return conn.Reply{Kind: conn.ReplyNil}
	case string:
		return conn.Reply{Kind: conn.ReplyBulk, Text: v}
	case int64:
		return conn.Reply{Kind: conn.ReplyInt, Int: v}
	case bool:
		if !v {
			return conn.Reply{Kind: conn.ReplyNil}
		}
		return conn.Reply{Kind: conn.ReplyInt, Int: 1}
	case error: // an error element of an array
		return conn.Reply{Kind: conn.ReplyError, Text: v.Error(), Err: v}
	case []any:
		r := conn.Reply{Kind: conn.ReplyArray, Array: make([]conn.Reply, 0, len(v))}
		for _, e := range v {
			r.Array = append(r.Array, replyOf(e))
		}
		return r
	case map[any]any:
		r := conn.Reply{Kind: conn.ReplyArray, Array: make([]conn.Reply, 0, 2*len(v))}
		for k, e := range v {
			r.Array = append(r.Array, replyOf(k), replyOf(e))
		}
		return r
	}
	return conn.Reply{Kind: conn.ReplyBulk, Text: fmt.Sprint(val)}
}
