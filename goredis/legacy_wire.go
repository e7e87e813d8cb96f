//go:build !goredisadapter

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
// GoRedisRetriesOff). It holds the arguments twice: as built (want,
// what the witness compares with) and a copy given to go-redis as
// *string (which go-redis writes as the string), so that a hook that
// rewrote an argument, in place or by replacing it, is seen. The command,
// both copies and the arguments' boxes are one allocation.
type wireCmd struct {
	redis.Cmd
	want    []string // the arguments as built: wantBuf's, or their own
	wantBuf [inlineArgs]string
	text    [inlineArgs]string
	args    [inlineArgs]any
}

// inlineArgs is how many arguments a wireCmd holds without another
// allocation (SET key token IFEQ token PX ms is 7).
const inlineArgs = 8

// newWireCmd builds the go-redis command of args.
func newWireCmd(ctx context.Context, args []string) *wireCmd {
	wc := &wireCmd{}
	if len(args) > inlineArgs {
		wc.want = append([]string(nil), args...)
	} else {
		wc.want = append(wc.wantBuf[:0], args...)
	}
	wc.finish(ctx)
	return wc
}

// opWireCmd builds the go-redis command of o's current step, its
// arguments appended by conn straight into the command.
func opWireCmd(ctx context.Context, o *conn.Operation) *wireCmd {
	wc := &wireCmd{}
	wc.want = o.AppendArgs(wc.wantBuf[:0])
	wc.finish(ctx)
	return wc
}

// finish copies want into the arguments go-redis is given.
func (wc *wireCmd) finish(ctx context.Context) {
	text, args := wc.text[:0], wc.args[:0]
	if n := len(wc.want); n > inlineArgs {
		text, args = make([]string, 0, n), make([]any, 0, n)
	}
	text = append(text, wc.want...)
	for i := range text {
		args = append(args, &text[i])
	}
	wc.Cmd = *redis.NewCmd(ctx, args...)
}

// command is the built command (for the observer, and for a pipeline).
func (wc *wireCmd) command() conn.Command { return conn.Command{Args: wc.want} }

// NoRetry reports true: the command is never re-sent by go-redis.
func (*wireCmd) NoRetry() bool { return true }

// unaltered reports whether the arguments go-redis is about to write are
// the ones built.
func (wc *wireCmd) unaltered() bool {
	args := wc.Args()
	if len(args) != len(wc.want) {
		return false
	}
	for j, a := range args {
		if p, ok := a.(*string); !ok || p == nil || *p != wc.want[j] {
			return false
		}
	}
	return true
}

// result is what go-redis itself read for one command: a reply (with the
// server's error when it is an error reply), or the transport error that
// left it without one.
type result struct {
	reply     conn.Reply
	server    error // *serverError for conn.ReplyError
	transport error // nil when the reply was read
}

// resultOf converts one command's outcome, its error and value as go-redis
// read them, into the pure protocol's Reply. A server error reply keeps its
// whole text; redis.Nil is the nil reply; any other error is a transport
// error.
func resultOf(err error, val any) result {
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
	switch v := val.(type) {
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
