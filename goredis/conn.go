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

// errAbandoned: Do returned before go-redis did (its ctx ended, or Close
// was called): the commands may have run, the connection is never used
// again, and its socket is dropped once go-redis returns.
var errAbandoned = errors.New("go-redis had not returned: the connection is abandoned")

// closeBound is how long, at most, a round trip may keep Close waiting:
// one that go-redis may keep longer runs on a goroutine of its own, which
// Do and Close leave at once.
const closeBound = time.Second

// ownBound bounds a round trip go-redis would let wait forever
// (ContextTimeoutEnabled with a ReadTimeout or WriteTimeout of -1, and a
// ctx without deadline), so that a goroutine left on a frozen server ends.
const ownBound = 10 * time.Second

// gconn is conn.Conn over one go-redis EphemeralConn: its socket is
// dropped, never pooled again, when it is closed. One Do at a time (the
// engine's contract for a connection that is not Pipelined); Err and
// Close are safe for concurrent use.
type gconn struct {
	cl      *client
	node    string
	rc      *redis.Conn
	w       witness
	done    chan struct{} // cap 1: a round trip on its own goroutine returned
	closing chan struct{} // closed by Close

	mu        sync.Mutex
	broken    error // set once: nothing more is written on rc
	busy      bool  // a round trip is on rc
	closed    bool
	abandoned bool // Do left the round trip on its goroutine, which closes rc
	used      bool // a round trip reached go-redis' socket: rc is dialled
}

// newConn returns the conn.Conn of rc, a Conn of a client of cl's, to node.
func newConn(cl *client, node string, rc *redis.Conn) *gconn {
	c := &gconn{cl: cl, node: node, rc: rc, done: make(chan struct{}, 1), closing: make(chan struct{})}
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

// Close implements conn.Conn: a Do in flight returns at once, or within
// closeBound when go-redis ends it by then; the socket is dropped, never
// pooled, once go-redis returns.
func (c *gconn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	close(c.closing)
	if c.broken == nil {
		c.broken = errConnClosed
	}
	if !c.busy {
		_ = c.rc.Close()
	}
}

// Do implements conn.Conn: cmds in one round trip (Process for one, a
// pipeline for several). It returns by ctx's deadline at the latest, and
// at once when Close is called: a round trip that go-redis does not end
// within closeBound by itself (a deadline with ContextTimeoutEnabled, or
// its own timeouts) runs on a goroutine of its own, left there (the
// connection broken) at ctx's deadline or on Close (rule
// GoRedisReturnsByTheDeadline). A bare cancellation of ctx is ignored, as
// go-redis ignores it: the batch goes on for the engine's other callers.
func (c *gconn) Do(ctx context.Context, cmds []conn.Command, replies []conn.Reply) error {
	if err := ctx.Err(); err != nil {
		return notWritten(err)
	}
	inline, err := c.begin(ctx)
	if err != nil {
		return notWritten(err)
	}
	if inline {
		c.w.roundTrip(ctx, c.rc, cmds)
		return c.finish(cmds, replies)
	}
	var expired <-chan time.Time
	if deadline, ok := ctx.Deadline(); ok {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	go c.roundTripper(ctx, cmds)
	left := errConnClosed
	select {
	case <-c.done:
		return c.finish(cmds, replies)
	case <-expired:
		left = context.DeadlineExceeded
	case <-c.closing:
	}
	c.abandon()
	c.cl.learnFailure(c)
	return fmt.Errorf("%w: %w", errAbandoned, left)
}

// begin marks a round trip in flight; inline reports whether go-redis
// itself ends it within closeBound. It fails when the connection is closed
// or broken (nothing more is written on a connection once it failed).
func (c *gconn) begin(ctx context.Context) (inline bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return false, c.broken
	}
	c.busy = true
	deadline, ok := ctx.Deadline()
	byCtx := ok && c.cl.ctxDeadlines && time.Until(deadline) <= closeBound
	byTimeouts := c.used && c.cl.ioBound > 0 && c.cl.ioBound <= closeBound
	return byCtx || byTimeouts, nil
}

// roundTripper runs a round trip Do may leave: cmds' texts are copied
// first (Do keeps nothing of its caller's once returned), and a round trip
// Do left closes the connection when go-redis returns.
func (c *gconn) roundTripper(ctx context.Context, cmds []conn.Command) {
	own := make([]conn.Command, len(cmds))
	for i, cmd := range cmds {
		own[i] = conn.Command{Args: append([]string(nil), cmd.Args...), Key: cmd.Key}
	}
	if _, ok := ctx.Deadline(); !ok && c.cl.ctxDeadlines && c.cl.ioBound == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ownBound)
		defer cancel()
	}
	c.w.roundTrip(ctx, c.rc, own)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.abandoned {
		c.busy = false
		_ = c.rc.Close()
		return
	}
	c.done <- struct{}{} // under mu: abandon sees it, or this sees abandon's mark
}

// abandon breaks the connection whose round trip Do left; the round trip's
// goroutine closes it when go-redis returns.
func (c *gconn) abandon() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.abandoned = true
	if c.broken == nil || c.broken == errConnClosed {
		c.broken = errAbandoned
	}
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
