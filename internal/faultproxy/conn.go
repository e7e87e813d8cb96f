package faultproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// closeMode says how Conn.shutdown closes the two sockets.
type closeMode uint8

const (
	closeQuiet closeMode = iota // plain close of both sockets
	closeFIN                    // FIN to the client first, then close both
	closeRST                    // reset (RST) both sockets
)

// Conn is one proxied connection: the socket the proxy accepted from the
// client and the socket it dialed to the server, with one forwarding pipe
// per direction. Conns are created by the Proxy and listed by Proxy.Conns;
// the zero value is not usable. Its methods are safe for concurrent use and
// do not block unless stated; fault methods called after the connection has
// closed have no effect.
type Conn struct {
	proxy    *Proxy
	id       int // set by Proxy.register before the Conn is published
	client   *net.TCPConn
	upstream *net.TCPConn

	clientAddr    string
	upstreamLocal string

	toServer *pipe
	toClient *pipe

	stop      chan struct{} // closed when shutdown starts
	done      chan struct{} // closed when every goroutine ended and sockets are closed
	closeOnce sync.Once
	closing   atomic.Bool
	running   atomic.Int32 // goroutines not yet ended
}

// newConn returns the Conn forwarding between client and upstream; its
// goroutines start with start.
func newConn(p *Proxy, client, upstream *net.TCPConn) *Conn {
	c := &Conn{
		proxy:         p,
		client:        client,
		upstream:      upstream,
		clientAddr:    client.RemoteAddr().String(),
		upstreamLocal: upstream.LocalAddr().String(),
		stop:          make(chan struct{}),
		done:          make(chan struct{}),
	}
	c.toServer = newPipe(client, upstream, c.stop)
	c.toClient = newPipe(upstream, client, c.stop)
	return c
}

// ID returns the connection's accept order, from 1: the n-th connection the
// proxy accepted has ID n (see Proxy.Accepted).
func (c *Conn) ID() int { return c.id }

// ClientAddr returns the client's address as the proxy sees it: the remote
// address of the accepted socket, which is the client's local address.
func (c *Conn) ClientAddr() string { return c.clientAddr }

// UpstreamLocalAddr returns the local address of the proxy's socket to the
// server. The server reports it as the client's addr= in CLIENT INFO and
// CLIENT LIST, which maps a server-side client to a proxied connection.
func (c *Conn) UpstreamLocalAddr() string { return c.upstreamLocal }

// Stall holds the bytes flowing in dir inside the proxy until Unstall: they
// are still read from the source and queued, never dropped and in order, so
// the writer's writes keep succeeding, as with a server that stopped reading
// or replies that stopped arriving. An end of stream read while stalled is
// delivered after the queued bytes on Unstall. A write the proxy has
// already started when Stall is called may still complete. Stalling a
// stalled direction has no effect.
func (c *Conn) Stall(dir Direction) {
	for _, p := range c.pipes(dir) {
		p.setStalled(true)
	}
}

// Unstall ends Stall for dir: the bytes queued in dir are written in order,
// then forwarding resumes. It does not wait for the queued bytes to be
// written.
func (c *Conn) Unstall(dir Direction) {
	for _, p := range c.pipes(dir) {
		p.setStalled(false)
	}
}

// Release lets the next n bytes of a stalled dir through, in order, and
// keeps holding what follows them: with Buffered, a test holds a stream at
// a point it chose (the replies read so far pass, the later ones stay held).
// Bytes queued now pass first; if fewer than n are queued, bytes read later
// pass until n have. An end of stream stays held. It has no effect on a
// direction that is not stalled, and Unstall ends what is left of n. It does not wait for the bytes to be written.
func (c *Conn) Release(dir Direction, n int) {
	for _, p := range c.pipes(dir) {
		p.release(n)
	}
}

// Delay makes the proxy write every chunk it reads in dir only once d has
// passed since it was read; order is kept. Chunks already queued are held
// to the new d. A d of 0 or less turns the delay off.
func (c *Conn) Delay(dir Direction, d time.Duration) {
	for _, p := range c.pipes(dir) {
		p.setDelay(d)
	}
}

// BlackHole silently drops every byte in dir from now on, including the
// bytes queued in the proxy and the end of stream, while both sockets stay
// open: a half-open connection or a network partition. It cannot be undone;
// the connection ends with Reset, Close or Proxy.Close, or when a socket
// fails.
func (c *Conn) BlackHole(dir Direction) {
	for _, p := range c.pipes(dir) {
		p.setBlackHole()
	}
}

// Buffered returns how many bytes read in dir the proxy holds and has not
// yet started to write (stalled, delayed or waiting for the socket).
func (c *Conn) Buffered(dir Direction) int {
	n := 0
	for _, p := range c.pipes(dir) {
		n += p.buffered()
	}
	return n
}

// WaitBuffered blocks until Buffered(dir) is at least n, ctx is done or the
// connection closes. It returns nil in the first case, ctx.Err() in the
// second and net.ErrClosed in the third. With Stall it tells a test that
// bytes sent through the proxy have arrived in it.
func (c *Conn) WaitBuffered(ctx context.Context, dir Direction, n int) error {
	pipes := c.pipes(dir)
	for {
		got := 0
		var changed []<-chan struct{}
		for _, p := range pipes {
			b, ch := p.bufferedAndChanged()
			got += b
			changed = append(changed, ch)
		}
		if got >= n {
			return nil
		}
		if err := waitAny(ctx, c.stop, changed); err != nil {
			return err
		}
	}
}

// Reset closes both sockets with a reset (RST, SO_LINGER 0): the client and
// the server see "connection reset by peer", and the bytes queued in the
// proxy are dropped. It does not wait; see Done.
func (c *Conn) Reset() { c.shutdown(closeRST) }

// Close sends a FIN to the client and closes the socket to the server, as a
// server that closed the connection would: the client reads the end of
// stream after the bytes already forwarded to it. The bytes queued in the
// proxy are dropped. As with a real server, if bytes from the client are
// still unread in the proxy's socket, the kernel sends a reset instead of
// the FIN. It does not wait; see Done.
func (c *Conn) Close() { c.shutdown(closeFIN) }

// Closed reports whether the connection is closed or closing: it is true
// from the moment Reset, Close or Proxy.Close is called, a socket fails, or
// both directions have ended. Done reports when closing has finished.
func (c *Conn) Closed() bool { return c.closing.Load() }

// Done returns a channel that is closed once both sockets of the connection
// are closed and its goroutines have ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// pipes returns the pipes of the directions in dir.
func (c *Conn) pipes(dir Direction) []*pipe {
	var out []*pipe
	if dir&ToServer != 0 {
		out = append(out, c.toServer)
	}
	if dir&ToClient != 0 {
		out = append(out, c.toClient)
	}
	return out
}

// start runs the reader and the writer of both pipes, counted in wg.
func (c *Conn) start(wg *sync.WaitGroup) {
	c.running.Store(4)
	for _, p := range c.pipes(Both) {
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer c.exit()
			c.read(p)
		}()
		go func() {
			defer wg.Done()
			defer c.exit()
			c.write(p)
		}()
	}
}

// read runs p's reader; at the end of stream it queues it, and on any other
// error it resets the connection, unless p is black-holed, in which case
// the failure is swallowed like its bytes.
func (c *Conn) read(p *pipe) {
	err := p.readLoop()
	if errors.Is(err, io.EOF) {
		p.push(chunk{eof: true, readAt: time.Now()})
		return
	}
	if !p.isBlackHole() {
		c.shutdown(closeRST)
	}
}

// write runs p's writer; on a write error it resets the connection.
func (c *Conn) write(p *pipe) {
	if err := p.writeLoop(); err != nil {
		c.shutdown(closeRST)
	}
}

// exit ends one goroutine of c; the last one closes the sockets, unlists c
// and closes done.
func (c *Conn) exit() {
	if c.running.Add(-1) != 0 {
		return
	}
	c.shutdown(closeQuiet)
	c.proxy.remove(c)
	close(c.done)
}

// shutdown closes both sockets as mode says and stops the writers; only the
// first call has an effect. Blocked reads and writes on the sockets return
// with an error.
func (c *Conn) shutdown(mode closeMode) {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		close(c.stop)
		switch mode {
		case closeRST:
			_ = c.client.SetLinger(0)
			_ = c.upstream.SetLinger(0)
		case closeFIN:
			_ = c.client.CloseWrite()
		}
		_ = c.client.Close()
		_ = c.upstream.Close()
		c.toServer.discard()
		c.toClient.discard()
	})
}

// waitAny blocks until one of chans is closed (nil), ctx is done
// (ctx.Err()) or stop is closed (net.ErrClosed).
func waitAny(ctx context.Context, stop <-chan struct{}, chans []<-chan struct{}) error {
	var a, b <-chan struct{} // nil channels never fire
	if len(chans) > 0 {
		a = chans[0]
	}
	if len(chans) > 1 {
		b = chans[1]
	}
	select {
	case <-a:
		return nil
	case <-b:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return net.ErrClosed
	}
}
