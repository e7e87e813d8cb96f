// Package faultproxy is an in-process TCP proxy that injects network faults
// between a client and a server, for chaos tests: it can hold, delay or drop
// the bytes of one direction of a connection, reset or close a connection,
// and refuse new ones.
//
// The proxy reads eagerly from both sockets of every connection and queues
// what it reads without bound, so a writer's writes keep succeeding while a
// direction is stalled or delayed. It is meant for short tests, not for
// moving large volumes of data.
package faultproxy

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"time"
)

// Direction of bytes through a proxied connection. Directions are bit flags
// and can be combined; the zero value selects no direction.
type Direction uint8

// The directions of a proxied connection.
const (
	ToServer Direction             = 1 << iota // client -> server
	ToClient                                   // server -> client
	Both     = ToServer | ToClient             // both directions
)

// String returns the name of d, such as "ToServer" or "Both".
func (d Direction) String() string {
	switch d & Both {
	case ToServer:
		return "ToServer"
	case ToClient:
		return "ToClient"
	case Both:
		return "Both"
	}
	return "None"
}

const (
	// dialTimeout bounds the proxy's connect to the target.
	dialTimeout = 5 * time.Second
	// acceptRetry is the pause after an Accept error other than the
	// listener being closed (for example, too many open files).
	acceptRetry = 10 * time.Millisecond
)

// Proxy is a TCP proxy listening on a loopback address that forwards every
// connection it accepts to a fixed target and can inject faults into it.
// Create one with Start; the zero value is not usable. Its methods are safe
// for concurrent use.
type Proxy struct {
	target string
	ln     *net.TCPListener
	ctx    context.Context // cancelled by Close: stops dials and waits
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine of the proxy

	closeOnce sync.Once
	closeErr  error

	mu       sync.Mutex
	conns    []*Conn       // registered and not yet finished, in accept order
	accepted int           // connections accepted, refused ones included
	stalled  Direction     // directions stalled by StallAll
	refuse   bool          // set by Refuse
	closed   bool          // set by Close
	acceptCh chan struct{} // closed and replaced at every accept
}

// Start listens on 127.0.0.1:0 and forwards every accepted connection to
// target (a host:port), which it dials once per accepted connection. It
// returns once the proxy is listening; forwarding runs in goroutines until
// Close. If target cannot be dialed, the accepted connection is reset.
func Start(target string) (*Proxy, error) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:   target,
		ln:       ln,
		ctx:      ctx,
		cancel:   cancel,
		acceptCh: make(chan struct{}),
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the address the proxy listens on, as host:port. Clients
// connect there instead of to the target.
func (p *Proxy) Addr() string {
	return p.ln.Addr().String()
}

// Target returns the address the proxy forwards connections to.
func (p *Proxy) Target() string {
	return p.target
}

// Conns returns the proxied connections not yet closed (see Conn.Closed), in
// accept order. The slice is a snapshot that the caller owns.
func (p *Proxy) Conns() []*Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*Conn, 0, len(p.conns))
	for _, c := range p.conns {
		if !c.Closed() {
			out = append(out, c)
		}
	}
	return out
}

// Accepted returns how many connections the proxy has accepted so far,
// including those it refused (see Refuse) or could not forward because the
// target could not be dialed. The n-th accepted connection, if forwarded,
// has ID n.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// WaitAccepted blocks until Accepted reaches n, ctx is done, or the proxy is
// closed. It returns nil in the first case, ctx.Err() in the second and
// net.ErrClosed in the third. When it returns nil for a forwarded
// connection, that connection is already listed by Conns (unless it has
// closed since).
func (p *Proxy) WaitAccepted(ctx context.Context, n int) error {
	for {
		p.mu.Lock()
		got, ch := p.accepted, p.acceptCh
		p.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.ctx.Done():
			return net.ErrClosed
		}
	}
}

// StallAll stalls dir (see Conn.Stall) on every current connection and on
// every connection accepted from now on, until UnstallAll.
func (p *Proxy) StallAll(dir Direction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled |= dir & Both
	for _, c := range p.conns {
		c.Stall(dir)
	}
}

// UnstallAll undoes StallAll for dir: connections accepted from now on are
// not stalled in dir, and dir is unstalled (see Conn.Unstall) on every
// current connection, including those stalled by Conn.Stall.
func (p *Proxy) UnstallAll(dir Direction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled &^= dir
	for _, c := range p.conns {
		c.Unstall(dir)
	}
}

// Refuse sets whether the proxy refuses new connections: while on, it
// accepts each new connection and closes it at once with a reset (RST), so
// the client sees "connection reset by peer" from its connect or, if the
// connect returned first, from its first read or write.
// Connections already forwarded are not affected.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = on
}

// Close stops listening, closes every connection as Conn.Close does, and
// blocks until every goroutine of the proxy has ended and every socket it
// opened is closed. It is idempotent and safe to call concurrently: every
// call waits, and calls after the first return nil.
func (p *Proxy) Close() error {
	first := false
	p.closeOnce.Do(func() {
		first = true
		p.mu.Lock()
		p.closed = true
		conns := append([]*Conn(nil), p.conns...)
		p.mu.Unlock()
		p.cancel()
		p.closeErr = p.ln.Close()
		for _, c := range conns {
			c.Close()
		}
	})
	p.wg.Wait()
	if first {
		return p.closeErr
	}
	return nil
}

// acceptLoop accepts connections until the listener is closed.
func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			select {
			case <-time.After(acceptRetry):
				continue
			case <-p.ctx.Done():
				return
			}
		}
		p.handle(client)
	}
}

// handle forwards client to the target, or resets it when the proxy refuses
// connections, the target cannot be dialed or the proxy is closing.
func (p *Proxy) handle(client *net.TCPConn) {
	if p.refusing() {
		p.count()
		resetTCP(client)
		return
	}
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		p.count()
		resetTCP(client)
		return
	}
	upstream := nc.(*net.TCPConn)
	c := newConn(p, client, upstream)
	if !p.register(c) {
		resetTCP(client)
		resetTCP(upstream)
		return
	}
	c.start(&p.wg)
}

// refusing reports whether Refuse is on.
func (p *Proxy) refusing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refuse
}

// count counts an accepted connection that is not forwarded.
func (p *Proxy) count() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.countLocked()
}

// countLocked counts an accepted connection and wakes WaitAccepted; it
// returns the new count. p.mu must be held.
func (p *Proxy) countLocked() int {
	p.accepted++
	close(p.acceptCh)
	p.acceptCh = make(chan struct{})
	return p.accepted
}

// register gives c its ID, applies StallAll to it and lists it; it returns
// false, without counting c, if the proxy is closing.
func (p *Proxy) register(c *Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	c.id = p.countLocked()
	c.Stall(p.stalled)
	p.conns = append(p.conns, c)
	return true
}

// remove unlists c once it has finished.
func (p *Proxy) remove(c *Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.conns, c); i >= 0 {
		p.conns = slices.Delete(p.conns, i, i+1)
	}
}

// resetTCP closes c with a reset (RST) instead of a FIN.
func resetTCP(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}
