//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

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
// ProcessHook and ProcessPipelineHook: it sees exactly what go-redis wrote
// and read, before any hook of the user's can rewrite it, and records it
// (rule GoRedisHooksCannotRewrite). One goroutine at a time uses a Conn,
// so one witness serves it.
type witness struct {
	wire     []*wireCmd
	calls    int
	moved    bool // the commands next was given were not ours
	snap     []result
	one      result // what go-redis read for one command (roundTripOne)
	recorded bool   // one was recorded
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
	return w.roundTripWires(ctx, rc, wireCmds(ctx, cmds))
}

// wireCmds builds the go-redis commands of cmds.
func wireCmds(ctx context.Context, cmds []conn.Command) []*wireCmd {
	wcs := make([]*wireCmd, len(cmds))
	for i, c := range cmds {
		wcs[i] = newWireCmd(ctx, c.Args)
	}
	return wcs
}

// roundTripWires is roundTrip of commands already built.
func (w *witness) roundTripWires(ctx context.Context, rc *redis.Conn, wcs []*wireCmd) ([]result, error) {
	w.calls, w.moved = 0, false
	w.wire = append(w.wire[:0], wcs...)
	defer w.forget()
	// A fresh record every round trip: the callers of this batch read theirs
	// while the next batch is on the wire (rule GoRedisNoForeignReply).
	w.snap = make([]result, 0, len(wcs))
	pipe := rc.Pipeline()
	for _, wc := range wcs {
		_ = pipe.Process(ctx, wc)
	}
	_, _ = pipe.Exec(ctx)
	switch {
	case w.calls == 0:
		return nil, errNotHandedOff
	case w.calls > 1 || w.moved || len(w.snap) != len(wcs):
		return nil, errHookAltered
	}
	return w.snap, nil
}

// roundTripOne is roundTrip of one command, sent alone (Conn.Process: no
// pipeline to build), its result returned by value.
func (w *witness) roundTripOne(ctx context.Context, rc *redis.Conn, wc *wireCmd) (result, error) {
	w.calls, w.moved, w.recorded = 0, false, false
	w.wire = append(w.wire[:0], wc)
	defer w.forget()
	_ = rc.Process(ctx, wc)
	switch {
	case w.calls == 0:
		return result{}, errNotHandedOff
	case w.calls > 1 || w.moved || !w.recorded:
		return result{}, errHookAltered
	}
	return w.one, nil
}

// forget drops the round trip's commands, which hold their caller's ctx
// (a lock held for hours must not keep its acquisition's ctx reachable:
// rule OwnedKeepAlive).
func (w *witness) forget() {
	clear(w.wire)
	w.wire = w.wire[:0]
}

// ours reports whether cmds are exactly the commands built, unaltered.
func (w *witness) ours(cmds []redis.Cmder) bool {
	if len(cmds) != len(w.wire) {
		return false
	}
	for i, c := range cmds {
		if c != redis.Cmder(w.wire[i]) || !w.wire[i].unaltered() {
			return false
		}
	}
	return true
}

// touches reports whether cmds hold any command of the transport's (only
// this package makes wireCmds, and one round trip at a time uses a Conn).
func (w *witness) touches(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if _, ok := c.(*wireCmd); ok {
			return true
		}
	}
	return false
}

// record reads what go-redis stored in each command right after next
// returned.
func (w *witness) record(cmds []redis.Cmder) {
	for _, c := range cmds {
		wc := c.(*wireCmd)
		w.snap = append(w.snap, resultOf(wc.Cmd.Err(), wc.Cmd.Val()))
	}
}

// witnessHook is the redis.Hook of a witness.
type witnessHook struct{ w *witness }

// DialHook passes dials through.
func (h witnessHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records what go-redis did with a command of roundTripOne.
func (h witnessHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		w := h.w
		wc, ok := cmd.(*wireCmd)
		if !ok {
			return next(ctx, cmd) // not the transport's
		}
		w.calls++
		if w.calls > 1 || len(w.wire) != 1 || w.wire[0] != wc || !wc.unaltered() {
			w.moved = true
			return next(ctx, cmd)
		}
		err := next(ctx, cmd) // go-redis sets cmd's error only once every hook returned
		w.one, w.recorded = resultOf(err, wc.Cmd.Val()), true
		return err
	}
}

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
