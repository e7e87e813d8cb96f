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

var (
	// errConnClosed: the engine closed the connection.
	errConnClosed = errors.New("the go-redis connection was closed")
	// errAbandoned: Do returned before go-redis did (ctx's deadline, or
	// Close): the commands may have run, and the connection is never used
	// again; its socket is dropped once go-redis returns.
	errAbandoned = errors.New("go-redis had not returned: the connection is abandoned")
)

// closeBound is how long, at most, a round trip may keep Close waiting: one
// go-redis may keep longer runs on a goroutine of its own, left at once.
const closeBound = time.Second

// ownBound bounds a round trip go-redis would let wait forever (deadlines
// from ctx only, and ctx has none), so that a goroutine left on a frozen
// server ends.
const ownBound = 10 * time.Second

// gconn is conn.Conn over one go-redis EphemeralConn (its socket is
// dropped, never pooled again, when it is closed): one Do at a time, as
// the engine does on a Conn that is not Pipelined; Err and Close are safe
// for concurrent use.
type gconn struct {
	cl      *client
	node    string
	rc      *redis.Conn
	w       witness
	done    chan struct{} // cap 1: a round trip on the worker goroutine returned
	closing chan struct{} // closed by Close

	mu        sync.Mutex
	broken    error // set once: nothing more is written on rc
	busy      bool  // a round trip is on rc
	closed    bool
	abandoned bool // Do left the round trip, whose goroutine closes rc

	work  chan struct{}   // a round trip for the worker (cap 1); nil before the first, or once released
	sent  context.Context // the ctx of the round trip handed to the worker; nil once it returned
	timer *time.Timer     // Do's deadline

	dialled bool // a round trip returned: the socket was dialled (one Do at a time reads and sets it)

	ended  func(error) // DoOrLeave's caller left the round trip on the worker: told its end (c.mu)
	endedN int         // the left round trip's commands
}

// newConn returns the conn.Conn of rc, a Conn of a client of cl's, to node.
func newConn(cl *client, node string, rc *redis.Conn) *gconn {
	c := &gconn{cl: cl, node: node, rc: rc, done: make(chan struct{}, 1), closing: make(chan struct{})}
	rc.AddHook(witnessHook{&c.w})
	return c
}

// Pipelined implements conn.Conn: false, a go-redis Conn carries one round
// trip at a time (two goroutines sharing one read each other's replies).
func (c *gconn) Pipelined() bool { return false }

// Err implements conn.Conn: the error that broke the connection, or nil.
func (c *gconn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}

// Close implements conn.Conn: a Do in flight returns at once (within
// closeBound when go-redis ends it by then), a round trip whose caller
// left (DoOrLeave) is told over, and the socket is dropped once go-redis
// returns.
func (c *gconn) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.closing)
	if c.broken == nil {
		c.broken = errConnClosed
	}
	if !c.busy {
		c.release()
	}
	ended := c.ended
	if ended != nil { // a round trip its caller left: over for the engine now, dropped when go-redis returns
		c.ended, c.abandoned = nil, true
	}
	c.mu.Unlock()
	if ended != nil {
		ended(fmt.Errorf("%w: %w", errAbandoned, errConnClosed))
	}
}

// Do implements conn.Conn: cmds in one round trip. It returns by ctx's
// deadline at the latest, and at once on Close: a round trip go-redis does
// not end within closeBound by itself (ctx's deadline, with
// ContextTimeoutEnabled) runs on the Conn's worker goroutine (started
// once, reused by each such round trip: no goroutine or timer per Do),
// left, the connection broken, at the deadline or on Close (rule
// GoRedisReturnsByTheDeadline). A bare cancellation is ignored, as go-redis
// ignores it: a batch goes on for the engine's other callers.
func (c *gconn) Do(ctx context.Context, cmds []conn.Command, replies []conn.Reply) error {
	if err := ctx.Err(); err != nil {
		return notWritten(err)
	}
	deadline, hasDeadline := ctx.Deadline()
	if err := c.begin(); err != nil {
		return notWritten(err)
	}
	c.w.prepare(ctx, cmds)
	if c.ownedByCaller(deadline, hasDeadline) {
		c.w.send(ctx, c.rc)
		return c.finish(len(cmds), replies)
	}
	var expired <-chan time.Time
	if hasDeadline {
		if c.timer == nil {
			c.timer = time.NewTimer(time.Until(deadline))
		} else {
			c.timer.Reset(time.Until(deadline))
		}
		defer c.timer.Stop()
		expired = c.timer.C
	}
	c.handOff(ctx)
	select {
	case <-c.done:
		return c.finish(len(cmds), replies)
	case <-expired:
		return c.leave(context.DeadlineExceeded)
	case <-c.closing:
		return c.leave(errConnClosed)
	}
}

// DoOrLeave implements conn.Leaver: the round trip runs on the worker
// goroutine; its caller returns as from Do at ctx's deadline or a Close
// (the connection broken), and at a bare cancellation it leaves the round
// trip, which goes on: the worker tells ended its outcome, or Close tells
// it first that the connection is over.
func (c *gconn) DoOrLeave(ctx context.Context, cmds []conn.Command, replies []conn.Reply, ended func(error)) (error, bool) {
	if err := ctx.Err(); err != nil {
		return notWritten(err), false
	}
	if err := c.begin(); err != nil {
		return notWritten(err), false
	}
	c.w.prepare(ctx, cmds)
	c.handOff(ctx)
	select {
	case <-c.done:
		return c.finish(len(cmds), replies), false
	case <-c.closing:
		return c.leave(errConnClosed), false
	case <-ctx.Done():
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return c.leave(context.DeadlineExceeded), false
	}
	c.mu.Lock()
	select {
	case <-c.done: // it returned in the same moment: the caller has its replies
		c.mu.Unlock()
		return c.finish(len(cmds), replies), false
	default:
	}
	if c.closed { // Close came first, and found no round trip to end
		c.mu.Unlock()
		return c.leave(errConnClosed), false
	}
	c.ended, c.endedN = ended, len(cmds)
	c.mu.Unlock()
	return context.Cause(ctx), true
}

// handOff gives the prepared round trip to the worker, started once.
func (c *gconn) handOff(ctx context.Context) {
	if c.work == nil {
		c.work = make(chan struct{}, 1)
		go c.worker(c.work)
	}
	c.sent = ctx // the worker clears it: a held lock must not keep its acquisition's ctx
	c.work <- struct{}{}
}

// leave breaks the connection whose round trip Do left (at the deadline
// or on Close, the cause).
func (c *gconn) leave(cause error) error {
	c.abandon()
	c.cl.learnFailure(c)
	return fmt.Errorf("%w: %w", errAbandoned, cause)
}

// ownedByCaller reports whether go-redis itself ends the round trip by
// ctx's deadline (if any) and within closeBound, so that it may run on the
// caller's goroutine, with no hand-off to the worker: go-redis bounds each
// write and each read by ctx's deadline with ContextTimeoutEnabled, and
// by WriteTimeout, then ReadTimeout, once the Conn is dialled (its first
// round trip may dial, which DialTimeout bounds).
func (c *gconn) ownedByCaller(deadline time.Time, hasDeadline bool) bool {
	now := time.Now()
	end, bounded := now.Add(c.cl.ioBound), c.cl.timeouts && c.dialled
	if hasDeadline && c.cl.ctxDeadlines && (!bounded || deadline.Before(end)) {
		end, bounded = deadline, true
	}
	return bounded && end.Sub(now) <= closeBound && (!hasDeadline || !end.After(deadline))
}

// begin marks a round trip in flight, unless the connection is closed or
// broken (nothing more is written on it once a round trip failed).
func (c *gconn) begin() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return c.broken
	}
	c.busy = true
	return nil
}

// worker sends each round trip Do hands it on a goroutine Do may leave;
// after one Do left it closes the connection when go-redis returns, and it
// ends then, or once work is closed.
func (c *gconn) worker(work <-chan struct{}) {
	for range work {
		ctx := c.sent
		cancel := context.CancelFunc(func() {})
		if _, ok := ctx.Deadline(); !ok && c.cl.ctxDeadlines && !c.cl.timeouts {
			ctx, cancel = context.WithTimeout(ctx, ownBound)
		}
		c.w.send(ctx, c.rc)
		cancel()
		c.sent, ctx = nil, nil
		c.mu.Lock()
		if c.abandoned {
			c.busy = false
			_ = c.rc.Close()
			c.mu.Unlock()
			return
		}
		if ended, n := c.ended, c.endedN; ended != nil { // its caller left: the outcome is ended's
			c.ended = nil
			c.mu.Unlock()
			ended(c.finish(n, nil))
			continue
		}
		c.done <- struct{}{} // under mu: abandon and DoOrLeave see it, or this sees their marks
		c.mu.Unlock()
	}
}

// abandon breaks the connection whose round trip Do left.
func (c *gconn) abandon() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.abandoned, c.broken = true, errAbandoned
	select {
	case <-c.done: // it returned in the same moment: nobody else closes rc
		c.busy = false
		c.release()
	default:
	}
}

// release closes rc and ends the worker, which is idle (c.mu held).
func (c *gconn) release() {
	_ = c.rc.Close()
	if c.work != nil {
		close(c.work)
		c.work = nil
	}
}

// finish classifies the round trip of n commands just made, fills replies
// (those read before a failure; none when nil: its caller left) and ends it; a failure breaks the
// connection (go-redis would redial it, or read a late reply on it) unless
// a hook stopped the round trip before go-redis.
func (c *gconn) finish(n int, replies []conn.Reply) error {
	c.dialled = true
	unwritten, err := c.w.outcome(n)
	for i, r := range c.w.record {
		if replies == nil || unwritten || r.transport != nil || errors.Is(err, errHookAltered) {
			break
		}
		replies[i] = r.reply
	}
	c.mu.Lock()
	c.busy = false
	if err != nil && err != errNotHandedOff && c.broken == nil {
		c.broken = err
	}
	if c.closed {
		c.release()
	}
	c.mu.Unlock()
	if err == nil {
		return nil
	}
	c.cl.learnFailure(c)
	if unwritten {
		return notWritten(c.cl.closedCause(err))
	}
	return err
}

// notWritten wraps err, the cause of a round trip that wrote nothing.
func notWritten(err error) error { return fmt.Errorf("%w: %w", conn.ErrNotWritten, err) }
