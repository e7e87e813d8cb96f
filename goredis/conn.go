//go:build goredisadapter

package goredis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// errConnClosed: the engine closed the connection.
var errConnClosed = errors.New("the go-redis connection was closed")

// errAbandoned: a round trip outlived its ctx's deadline (go-redis, without
// ContextTimeoutEnabled, bounds I/O only by its own timeouts): Do returned
// at the deadline, the connection is never used again, and its socket is
// dropped once go-redis returns.
var errAbandoned = errors.New("go-redis had not returned at the deadline: the connection is abandoned")

// gconn is conn.Conn over one go-redis EphemeralConn: its socket is
// dropped, never pooled again, when it is closed. One Do at a time (the
// engine's contract for a connection that is not Pipelined); Err and
// Close are safe for concurrent use.
type gconn struct {
	cl   *client
	node string
	rc   *redis.Conn
	w    witness
	done chan struct{} // cap 1: a round trip on roundTripper's goroutine returned

	mu     sync.Mutex
	broken error // set once: nothing more is written on rc
	busy   bool  // a round trip is on rc
	closed bool
	used   bool // a round trip reached go-redis' socket: rc is dialled
}

// newConn returns the conn.Conn of rc, a Conn of a client of cl's, to node.
func newConn(cl *client, node string, rc *redis.Conn) *gconn {
	c := &gconn{cl: cl, node: node, rc: rc, done: make(chan struct{}, 1)}
	c.w.install(rc)
	return c
}

// Pipelined implements conn.Conn: false, a go-redis Conn carries one round
// trip at a time (two goroutines sharing one can read each other's
// replies).
func (c *gconn) Pipelined() bool { return false }

// Err implements conn.Conn: the error that broke the connection, or nil.
func (c *gconn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}

// Close implements conn.Conn. A round trip in flight keeps the socket
// until go-redis returns (bounded by its deadline); the socket is then
// dropped, never pooled.
func (c *gconn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if c.broken == nil {
		c.broken = errConnClosed
	}
	if !c.busy {
		_ = c.rc.Close()
	}
}

// Do implements conn.Conn: cmds in one round trip (Process for one,
// a pipeline for several). It returns by ctx's deadline at the latest:
// go-redis honours a deadline itself with ContextTimeoutEnabled, or when
// its own timeouts end sooner; otherwise the round trip runs on its own
// goroutine and Do leaves it at the deadline (rule GoRedisReturnsByTheDeadline).
func (c *gconn) Do(ctx context.Context, cmds []conn.Command, replies []conn.Reply) error {
	if err := ctx.Err(); err != nil {
		return notWritten(err)
	}
	bounded, err := c.begin(ctx)
	if err != nil {
		return notWritten(err)
	}
	if bounded {
		c.w.roundTrip(ctx, c.rc, cmds)
		return c.finish(cmds, replies)
	}
	go c.roundTripper(ctx, cmds)
	select {
	case <-c.done:
		return c.finish(cmds, replies)
	case <-ctx.Done():
		c.abandon()
		c.cl.learnFailure(c)
		return fmt.Errorf("%w: %w", errAbandoned, context.Cause(ctx))
	}
}

// begin marks a round trip in flight; bounded reports whether go-redis
// itself ends it by ctx's deadline. It fails when the connection is closed
// or broken (nothing more is written on a connection once it failed).
func (c *gconn) begin(ctx context.Context) (bounded bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return false, c.broken
	}
	c.busy = true
	deadline, ok := ctx.Deadline()
	return !ok || c.cl.ctxDeadlines || (c.used && time.Until(deadline) >= c.cl.ioBound), nil
}

// roundTripper runs a round trip Do may leave at its deadline: cmds' texts
// are copied (Do keeps nothing of its caller's once returned), and an
// abandoned round trip closes the connection when go-redis returns.
func (c *gconn) roundTripper(ctx context.Context, cmds []conn.Command) {
	own := make([]conn.Command, len(cmds))
	for i, cmd := range cmds {
		own[i] = conn.Command{Args: append([]string(nil), cmd.Args...), Key: cmd.Key}
	}
	c.w.roundTrip(ctx, c.rc, own)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken == errAbandoned {
		c.busy = false
		_ = c.rc.Close()
		return
	}
	c.done <- struct{}{} // under mu, so that abandon sees it or this sees abandon's mark
}

// abandon breaks the connection whose round trip outlived Do; the round
// trip's goroutine closes it when go-redis returns.
func (c *gconn) abandon() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.broken = errAbandoned
	select {
	case <-c.done: // it returned in the same moment: nobody else closes it
		c.busy = false
		_ = c.rc.Close()
	default:
	}
}

// finish classifies the round trip just made, fills replies and ends it.
func (c *gconn) finish(cmds []conn.Command, replies []conn.Reply) error {
	unwritten, err := c.w.outcome(len(cmds))
	if !unwritten && (err == nil || !errors.Is(err, errHookAltered)) {
		for i, r := range c.w.record { // the replies read before a transport error, or all
			if r.transport != nil {
				break
			}
			replies[i] = r.reply
		}
	}
	c.mu.Lock()
	c.busy = false
	c.used = c.used || !unwritten
	if err != nil && !errors.Is(err, errNotHandedOff) && c.broken == nil {
		c.broken = err // never written on again: go-redis would redial or reuse it
	}
	closeNow := c.closed
	c.mu.Unlock()
	if closeNow {
		_ = c.rc.Close()
	}
	if err == nil {
		return nil
	}
	c.cl.learnFailure(c)
	if unwritten {
		return notWritten(c.cl.closedCause(err))
	}
	return err
}

// notWritten wraps err, the cause of a round trip that wrote nothing, with
// conn.ErrNotWritten.
func notWritten(err error) error { return fmt.Errorf("%w: %w", conn.ErrNotWritten, err) }
