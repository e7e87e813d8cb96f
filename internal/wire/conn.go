package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/respire-go/respire/conn"
)

// pconn is one pinned, pipelined connection: concurrent callers write
// their pipelines in turn, a reader goroutine hands each its replies in
// order and every RESP3 push to the connection's push function. It never
// re-sends anything. Safe for concurrent use.
type pconn struct {
	nc      net.Conn
	push    func(keys []string)           // invalidations; nil: they are dropped
	message func(channel, payload string) // pub/sub messages; nil: they are dropped

	wmu sync.Mutex // one pipeline written at a time
	buf []byte     // the write buffer (under wmu)

	mu      sync.Mutex
	waiting []*call // calls whose replies are due, in write order
	broken  error   // set once the reader stopped: every later call fails
	done    chan struct{}
}

// call is one pipeline's wait for its replies.
type call struct {
	replies []conn.Reply
	next    int           // how many replies arrived
	left    bool          // the caller stopped waiting: replies are dropped
	done    chan struct{} // cap 1: one value once every reply came or the connection broke
	err     error         // the connection broke before every reply came
}

// calls recycles calls: a caller that got its answer puts its call back;
// one that left leaves it to the collector (the reader may still touch it).
var calls = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// newConn starts nc's reader.
func newConn(nc net.Conn, push func(keys []string)) *pconn {
	c := &pconn{nc: nc, push: push, done: make(chan struct{})}
	go c.read()
	return c
}

// Pipelined implements conn.Conn.
func (c *pconn) Pipelined() bool { return true }

// Err implements conn.Conn: the error that stopped the reader.
func (c *pconn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}

// Close implements conn.Conn: the socket is closed and the reader ends
// (failing what still waits, outcome unknown).
func (c *pconn) Close() {
	_ = c.nc.Close()
	<-c.done
}

// Do implements conn.Conn.
func (c *pconn) Do(ctx context.Context, cmds []conn.Command, replies []conn.Reply) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", conn.ErrNotWritten, err)
	}
	k := calls.Get().(*call)
	k.replies = replies
	if err := c.write(cmds, k); err != nil {
		return err // k is left: the reader may still hold it
	}
	select {
	case <-k.done:
	case <-ctx.Done():
		c.mu.Lock()
		select {
		case <-k.done:
			c.mu.Unlock()
		default:
			k.left = true
			c.mu.Unlock()
			return context.Cause(ctx)
		}
	}
	err := k.err
	*k = call{done: k.done}
	calls.Put(k)
	return err
}

// send writes cmds expecting no reply (SUBSCRIBE on RESP3, whose
// confirmations are pushes).
func (c *pconn) send(cmds []conn.Command) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.buf = c.buf[:0]
	for _, cmd := range cmds {
		c.buf = appendCommand(c.buf, cmd.Args)
	}
	_, err := c.nc.Write(c.buf)
	return err
}

// write queues k for its replies and writes cmds. An error before any
// byte reached the socket matches conn.ErrNotWritten.
func (c *pconn) write(cmds []conn.Command, k *call) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if c.broken != nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: %w", conn.ErrNotWritten, c.broken)
	}
	c.waiting = append(c.waiting, k)
	c.mu.Unlock()
	c.buf = c.buf[:0]
	for _, cmd := range cmds {
		c.buf = appendCommand(c.buf, cmd.Args)
	}
	n, err := c.nc.Write(c.buf)
	if err == nil {
		return nil
	}
	c.mu.Lock()
	k.left = true // the caller returns now: nothing may touch its replies
	c.mu.Unlock()
	_ = c.nc.Close() // a partial pipeline must not be followed by another's bytes
	if n == 0 {
		return fmt.Errorf("%w: %w", conn.ErrNotWritten, err)
	}
	return err
}

// read is the reader goroutine: replies go to the calls in order, pushes
// to push; when the socket fails every waiting call fails with the error,
// push gets nil (everything tracked is forgotten), and later calls are
// refused unwritten.
func (c *pconn) read() {
	defer close(c.done)
	r := bufio.NewReaderSize(c.nc, 16<<10)
	var err error
	for {
		var f frame
		if f, err = readFrame(r); err != nil {
			break
		}
		if f.push {
			c.pushed(f.reply.Array)
			continue
		}
		if !c.deliver(f.reply) {
			err = fmt.Errorf("%w: a reply nobody asked for", errProtocol)
			break
		}
	}
	c.fail(err)
}

// deliver hands reply to the oldest waiting call; false when none waits.
func (c *pconn) deliver(reply conn.Reply) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) == 0 {
		return false
	}
	k := c.waiting[0]
	if !k.left {
		k.replies[k.next] = reply
	}
	k.next++
	if k.next == len(k.replies) {
		n := copy(c.waiting, c.waiting[1:]) // keep the array: no allocation per call
		c.waiting[n] = nil
		c.waiting = c.waiting[:n]
		k.done <- struct{}{}
	}
	return true
}

// fail ends the connection with err.
func (c *pconn) fail(err error) {
	if err == nil || errors.Is(err, net.ErrClosed) {
		err = net.ErrClosed
	}
	c.mu.Lock()
	c.broken = err
	waiting := c.waiting
	c.waiting = nil
	for _, k := range waiting {
		k.err = err
		k.done <- struct{}{}
	}
	c.mu.Unlock()
	_ = c.nc.Close()
	if c.push != nil {
		c.push(nil)
	}
}

// pushed handles one RESP3 push: an invalidation ("invalidate", keys or
// null) goes to push, a pub/sub message to message; others are dropped.
func (c *pconn) pushed(elems []conn.Reply) {
	if c.message != nil && len(elems) == 3 && elems[0].Text == "message" {
		c.message(elems[1].Text, elems[2].Text)
		return
	}
	if c.push == nil || len(elems) < 2 || elems[0].Text != "invalidate" {
		return
	}
	if elems[1].Kind != conn.ReplyArray {
		c.push(nil) // a null invalidation: everything tracked is forgotten
		return
	}
	keys := make([]string, 0, len(elems[1].Array))
	for _, k := range elems[1].Array {
		keys = append(keys, k.Text)
	}
	c.push(keys)
}

// The connections are conn.Conns.
var _ conn.Conn = (*pconn)(nil)
