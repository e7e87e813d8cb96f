package goredis

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// wireCmd is one command as handed to go-redis: a generic command whose
// NoRetry is true, so that go-redis re-sends neither it nor a pipeline
// holding it, whatever the client's MaxRetries (rule GoRedisRetriesOff).
// It holds its arguments twice: as built (want, what the witness compares
// with) and a copy given to go-redis as *string, so that a hook that
// rewrote an argument, in place or by replacing it, is seen. The first
// command of a round trip carries the witness' firstArg in place of its
// name. The command, both copies and the boxes are one allocation.
type wireCmd struct {
	redis.Cmd
	want    []string
	wantBuf [inlineArgs]string
	text    [inlineArgs]string
	args    [inlineArgs]any
}

// inlineArgs is how many arguments a wireCmd holds without another
// allocation (SET key token IFEQ token PX ms is 7).
const inlineArgs = 8

// newWireCmd builds the go-redis command of args; first, when not nil,
// stands for the name (args[0]).
func newWireCmd(ctx context.Context, args []string, first *firstArg) *wireCmd {
	wc := &wireCmd{}
	text, boxes := wc.text[:0], wc.args[:0]
	if n := len(args); n > inlineArgs {
		wc.want = append([]string(nil), args...)
		text, boxes = make([]string, 0, n), make([]any, 0, n)
	} else {
		wc.want = append(wc.wantBuf[:0], args...)
	}
	text = append(text, args...)
	for i := range text {
		boxes = append(boxes, &text[i])
	}
	if first != nil && len(boxes) > 0 {
		first.name = args[0]
		boxes[0] = first
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
			if f, ok := a.(*firstArg); !ok || f != first || f.name != wc.want[0] {
				return false
			}
			continue
		}
		if p, ok := a.(*string); !ok || p == nil || *p != wc.want[j] {
			return false
		}
	}
	return true
}

// firstArg is the name of a round trip's first command as go-redis is
// given it: go-redis' writer calls MarshalBinary when it writes that
// argument into the connection's buffer, which it flushes only once every
// command was written into it (and which holds at least 64 bytes: New
// refuses less). So a round trip whose firstArg was never marshalled wrote
// no byte of its commands to the socket: the one fact behind
// conn.ErrNotWritten (rule GoRedisNotWrittenIsProved).
type firstArg struct {
	name    string
	written bool
	buf     []byte
}

// MarshalBinary records that go-redis is writing the round trip and
// returns the name (the writer copies it at once).
func (f *firstArg) MarshalBinary() ([]byte, error) {
	f.written = true
	f.buf = append(f.buf[:0], f.name...)
	return f.buf, nil
}

// String returns the name, which is what go-redis' Cmd.Name (and so a
// tracing hook) reads.
func (f *firstArg) String() string { return f.name }

// result is what go-redis itself read for one command: a reply, or the
// transport error that left it without one.
type result struct {
	reply     conn.Reply
	transport error
}

// resultOf converts one command's outcome as go-redis read it. A server
// error reply keeps its whole text and go-redis' error value; redis.Nil is
// the nil reply; any other error is a transport error.
func resultOf(err error, val any) result {
	switch {
	case err == nil:
		return result{reply: replyOf(val)}
	case errors.Is(err, redis.Nil):
		return result{reply: conn.Reply{Kind: conn.ReplyNil}}
	case isServerReply(err):
		return result{reply: conn.Reply{Kind: conn.ReplyError, Text: err.Error(), Err: err}}
	}
	return result{transport: err}
}

// replyOf maps a value go-redis read onto conn's reply kinds (RESP3 maps
// flattened key, value, …; doubles and big numbers as text).
func replyOf(val any) conn.Reply {
	switch v := val.(type) {
	case nil:
		return conn.Reply{Kind: conn.ReplyNil}
	case string:
		return conn.Reply{Kind: conn.ReplyBulk, Text: v}
	case int64:
		return conn.Reply{Kind: conn.ReplyInt, Int: v}
	case bool:
		if v {
			return conn.Reply{Kind: conn.ReplyInt, Int: 1}
		}
		return conn.Reply{Kind: conn.ReplyNil}
	case float64:
		return conn.Reply{Kind: conn.ReplyBulk, Text: strconv.FormatFloat(v, 'g', -1, 64)}
	case *big.Int:
		return conn.Reply{Kind: conn.ReplyBulk, Text: v.String()}
	case error: // an error element of an array
		return conn.Reply{Kind: conn.ReplyError, Text: v.Error(), Err: v}
	case []any:
		r := conn.Reply{Kind: conn.ReplyArray, Array: make([]conn.Reply, len(v))}
		for i, e := range v {
			r.Array[i] = replyOf(e)
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

// isServerReply reports whether err, as go-redis' reader returned it, is a
// server's error reply (go-redis' reply types implement redis.Error; its
// client-side errors and network errors do not).
func isServerReply(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	var ne net.Error
	return !errors.As(err, &ne)
}
