package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// Errors of a round trip whose commands a user's hook did not hand to
// go-redis as built.
var (
	// errNotHandedOff: a user hook returned without calling next, so
	// nothing reached go-redis (go-redis runs next synchronously).
	errNotHandedOff = errors.New("a go-redis hook returned without sending the commands")
	// errHookAltered: a user hook called next more than once, or with
	// other commands or arguments: what was sent is unknown.
	errHookAltered = errors.New("a go-redis hook re-sent or altered the commands")
)

// witness is installed on every go-redis Conn the adapter uses as its
// innermost ProcessHook and ProcessPipelineHook: it sees exactly what
// go-redis wrote and read, before any hook of the user's can rewrite it,
// and records it (rule GoRedisHooksCannotRewrite). One round trip at a
// time uses a Conn, so one witness serves it.
type witness struct {
	first  firstArg // the round trip's first argument: written once go-redis writes
	wire   []*wireCmd
	calls  int  // how often a user hook called next with our commands
	moved  bool // next was given our commands altered, or mixed with others
	record []result
}

// install adds w to rc as its innermost hook (go-redis runs the hooks added
// last closest to the socket).
func (w *witness) install(rc *redis.Conn) { rc.AddHook(witnessHook{w}) }

// roundTrip sends cmds on rc, one alone with Process, several in one
// pipeline, and records what go-redis read for each. It blocks until
// go-redis returns: a deadline of ctx (with ContextTimeoutEnabled) or the
// client's timeouts end its I/O, a cancellation does not.
func (w *witness) roundTrip(ctx context.Context, rc *redis.Conn, cmds []conn.Command) {
	w.calls, w.moved, w.first.written = 0, false, false
	w.record = w.record[:0]
	w.wire = w.wire[:0]
	for i, c := range cmds {
		first := &w.first
		if i > 0 {
			first = nil
		}
		w.wire = append(w.wire, newWireCmd(ctx, c.Args, first))
	}
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
	w.wire = w.wire[:0]
}

// outcome classifies the round trip just made. notWritten: no byte of it
// reached the socket — go-redis was handed the commands as built, or not
// at all, and never wrote the first one's name — with the error that
// stopped it; otherwise err is nil when every command got its reply (in
// w.record), or the error that left one without.
func (w *witness) outcome(n int) (notWritten bool, err error) {
	if w.moved {
		return false, errHookAltered // what go-redis wrote is not what was built
	}
	if !w.first.written {
		for _, r := range w.record {
			if r.transport != nil {
				return true, r.transport
			}
			if r.reply.Kind == conn.ReplyError { // an answer to go-redis' handshake, not to us
				return true, r.reply.Err
			}
		}
		return true, errNotHandedOff
	}
	if w.calls != 1 || len(w.record) != n {
		return false, errHookAltered
	}
	for _, r := range w.record {
		if r.transport != nil {
			return false, r.transport
		}
	}
	return false, nil
}

// ours reports whether cmds are exactly the commands built, unaltered.
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

// touches reports whether cmds hold a command of the adapter's (only this
// package makes wireCmds, and one round trip at a time uses a Conn).
func touches(cmds ...redis.Cmder) bool {
	for _, c := range cmds {
		if _, ok := c.(*wireCmd); ok {
			return true
		}
	}
	return false
}

// witnessHook is the redis.Hook of a witness.
type witnessHook struct{ w *witness }

// DialHook passes dials through.
func (h witnessHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records what go-redis did with a lone command.
func (h witnessHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		w := h.w
		if !touches(cmd) {
			return next(ctx, cmd) // go-redis' own (a new connection's handshake)
		}
		w.calls++
		if w.calls > 1 || len(w.wire) != 1 || cmd != redis.Cmder(w.wire[0]) || !w.wire[0].unaltered(&w.first) {
			w.moved = true
			return next(ctx, cmd)
		}
		err := next(ctx, cmd) // go-redis sets cmd's error once every hook returned
		w.record = append(w.record, resultOf(err, w.wire[0].Cmd.Val()))
		return err
	}
}

// ProcessPipelineHook records what go-redis did with a pipeline.
func (h witnessHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		w := h.w
		if !touches(cmds...) {
			return next(ctx, cmds) // go-redis' own (a new connection's handshake)
		}
		w.calls++
		if w.calls > 1 || !w.ours(cmds) {
			w.moved = true
			return next(ctx, cmds)
		}
		err := next(ctx, cmds)
		for _, c := range cmds {
			wc := c.(*wireCmd)
			w.record = append(w.record, resultOf(wc.Cmd.Err(), wc.Cmd.Val()))
		}
		return err
	}
}
