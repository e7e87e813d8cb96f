package goredis

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// wireCmd is one command the transport sends: a generic go-redis command
// whose NoRetry is true, so that go-redis re-sends neither it nor a
// pipeline holding it, whatever the client's MaxRetries (rule
// GoRedisRetriesOff).
type wireCmd struct{ *redis.Cmd }

// NoRetry reports true: the command is never re-sent by go-redis.
func (wireCmd) NoRetry() bool { return true }

// result is what go-redis itself read for one command: a reply (with the
// server's error when it is an error reply), or the transport error that
// left it without one.
type result struct {
	reply     conn.Reply
	server    error // *serverError for conn.ReplyError
	transport error // nil when the reply was read
}

// Errors of a round trip whose commands the witness did not see go out as
// built.
var (
	// errNotHandedOff: a user hook returned without calling next, so
	// nothing reached the Conn (go-redis runs next synchronously).
	errNotHandedOff = errors.New("a go-redis hook returned without sending the commands")
	// errHookAltered: a user hook called next more than once, or with
	// other commands or arguments: what was sent is unknown.
	errHookAltered = errors.New("a go-redis hook re-sent or altered the commands")
)

// witness is installed on every Conn the transport uses as its innermost
// ProcessPipelineHook: it sees exactly what go-redis wrote and read, before
// any hook of the user's can rewrite it, and records it (rule
// GoRedisHooksCannotRewrite). One goroutine at a time uses a Conn, so one
// witness serves it.
type witness struct {
	want  []conn.Command
	wire  []redis.Cmder
	calls int
	moved bool // the commands next was given were not ours
	snap  []result
}

// install adds w to rc as its innermost hook (go-redis wraps the hooks
// added last closest to the socket).
func (w *witness) install(rc *redis.Conn) { rc.AddHook(witnessHook{w}) }

// roundTrip sends cmds on rc in one pipeline and returns, per command, what
// go-redis read. It blocks until go-redis returns (a deadline of ctx or the
// client's timeouts end I/O; a cancellation does not). The error is
// errNotHandedOff (nothing sent) or errHookAltered (anything may have been
// sent); transport errors are per command.
func (w *witness) roundTrip(ctx context.Context, rc *redis.Conn, cmds []conn.Command) ([]result, error) {
	w.want, w.calls, w.moved = cmds, 0, false
	w.wire = w.wire[:0]
	// A fresh record every round trip: the callers of this batch read theirs
	// while the next batch is on the wire (rule GoRedisNoForeignReply).
	w.snap = make([]result, 0, len(cmds))
	pipe := rc.Pipeline()
	for _, c := range cmds {
		args := make([]any, len(c.Args))
		for i, a := range c.Args {
			args[i] = a
		}
		wc := wireCmd{redis.NewCmd(ctx, args...)}
		w.wire = append(w.wire, wc)
		_ = pipe.Process(ctx, wc)
	}
	_, _ = pipe.Exec(ctx)
	switch {
	case w.calls == 0:
		return nil, errNotHandedOff
	case w.calls > 1 || w.moved || len(w.snap) != len(cmds):
		return nil, errHookAltered
	}
	return w.snap, nil
}

// ours reports whether cmds are exactly the commands built, unaltered.
func (w *witness) ours(cmds []redis.Cmder) bool {
	if len(cmds) != len(w.wire) {
		return false
	}
	for i, c := range cmds {
		if c != w.wire[i] {
			return false
		}
		args := c.Args()
		if len(args) != len(w.want[i].Args) {
			return false
		}
		for j, a := range args {
			if s, ok := a.(string); !ok || s != w.want[i].Args[j] {
				return false
			}
		}
	}
	return true
}

// touches reports whether cmds hold any command of the transport's (only
// this package makes wireCmds, and one round trip at a time uses a Conn).
func (w *witness) touches(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if _, ok := c.(wireCmd); ok {
			return true
		}
	}
	return false
}

// record reads what go-redis stored in each command right after next
// returned.
func (w *witness) record(cmds []redis.Cmder) {
	for _, c := range cmds {
		w.snap = append(w.snap, resultOf(c.(wireCmd).Cmd))
	}
}

// resultOf converts one command's outcome into the pure protocol's Reply.
// A server error reply keeps its whole text; redis.Nil is the nil reply;
// any other error is a transport error.
func resultOf(c *redis.Cmd) result {
	err := c.Err()
	switch {
	case err == nil:
	case errors.Is(err, redis.Nil):
		return result{reply: conn.Reply{Kind: conn.ReplyNil}}
	case isServerReply(err):
		se := &serverError{text: err.Error()}
		return result{reply: conn.Reply{Kind: conn.ReplyError, Text: se.text}, server: se}
	default:
		return result{transport: err}
	}
	switch v := c.Val().(type) {
	case string:
		return result{reply: conn.Reply{Kind: conn.ReplyBulk, Text: v}}
	case int64:
		return result{reply: conn.Reply{Kind: conn.ReplyInt, Int: v}}
	case nil:
		return result{reply: conn.Reply{Kind: conn.ReplyNil}}
	case bool:
		if v {
			return result{reply: conn.Reply{Kind: conn.ReplyInt, Int: 1}}
		}
		return result{reply: conn.Reply{Kind: conn.ReplyNil}}
	}
	return result{reply: conn.Reply{}}
}

// isServerReply reports whether err, as go-redis' reader returned it, is a
// server's error reply (go-redis' own reply types implement redis.Error;
// its client-side errors do not, network errors neither).
func isServerReply(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	var ne net.Error
	return !errors.As(err, &ne)
}

// witnessHook is the redis.Hook of a witness.
type witnessHook struct{ w *witness }

// DialHook passes dials through.
func (h witnessHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook passes single commands through (the transport sends none).
func (h witnessHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook records what go-redis did with the pipeline.
func (h witnessHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		w := h.w
		if !w.touches(cmds) {
			return next(ctx, cmds) // go-redis' own (the handshake of a new connection)
		}
		w.calls++
		if w.calls > 1 || !w.ours(cmds) {
			w.moved = true
			return next(ctx, cmds)
		}
		err := next(ctx, cmds)
		w.record(cmds)
		return err
	}
}
