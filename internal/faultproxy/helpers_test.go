package faultproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	// waitLimit bounds every wait for something that must happen; reaching
	// it fails the test and never makes it pass.
	waitLimit = 5 * time.Second
	// quietWindow is how long a test watches for something that must not
	// happen; a bug can slip through it but it never fails a correct run.
	quietWindow = 100 * time.Millisecond
)

// lineServer is a loopback TCP server that reports every line it receives
// and, if echo is set, writes it back.
type lineServer struct {
	ln    net.Listener
	echo  bool
	conns chan *serverConn // accepted connections, in accept order
	quit  chan struct{}    // closed by close: unblocks reports nobody reads
	wg    sync.WaitGroup

	mu  sync.Mutex
	all []net.Conn
}

// serverConn is one connection accepted by a lineServer.
type serverConn struct {
	conn  net.Conn
	lines chan string // every line received
	end   chan error  // the read error that ended the connection (io.EOF at a FIN)
}

// startServer starts a lineServer that is closed, with all its goroutines
// ended, when the test ends.
func startServer(t *testing.T, echo bool) *lineServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &lineServer{ln: ln, echo: echo, conns: make(chan *serverConn, 64), quit: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *lineServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.all = append(s.all, c)
		s.mu.Unlock()
		sc := &serverConn{conn: c, lines: make(chan string, 1<<16), end: make(chan error, 1)}
		s.conns <- sc
		s.wg.Add(1)
		go s.serve(sc)
	}
}

func (s *lineServer) serve(sc *serverConn) {
	defer s.wg.Done()
	r := bufio.NewReader(sc.conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			sc.end <- err
			return
		}
		select {
		case sc.lines <- line:
		case <-s.quit:
			return
		}
		if s.echo {
			if _, err := sc.conn.Write([]byte(line)); err != nil {
				sc.end <- err
				return
			}
		}
	}
}

func (s *lineServer) close() {
	_ = s.ln.Close()
	close(s.quit)
	s.mu.Lock()
	for _, c := range s.all {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *lineServer) addr() string { return s.ln.Addr().String() }

// nextConn returns the next connection the server accepted.
func (s *lineServer) nextConn(t *testing.T) *serverConn {
	t.Helper()
	return recv(t, s.conns)
}

// startProxy starts a proxy to target that is closed when the test ends.
func startProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := Start(target)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// dial connects to the proxy; the connection is closed when the test ends.
func dial(t *testing.T, p *Proxy) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

// dialReset connects to p, which is expected to reset the connection, and
// returns the error of the connect or, if it succeeds, of the first read:
// the reset can arrive before the connect returns.
func dialReset(t *testing.T, p *Proxy) error {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		return err
	}
	defer c.Close()
	return readErr(t, c)
}

// setup starts an echo server and a proxy to it, dials the proxy and
// returns the client socket, the proxied connection and the server side.
func setup(t *testing.T) (*Proxy, *net.TCPConn, *Conn, *serverConn) {
	t.Helper()
	srv := startServer(t, true)
	p := startProxy(t, srv.addr())
	client := dial(t, p)
	sc := srv.nextConn(t)
	return p, client, waitConn(t, p, 1), sc
}

// waitConn returns the proxied connection with ID id.
func waitConn(t *testing.T, p *Proxy, id int) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	require.NoError(t, p.WaitAccepted(ctx, id))
	for _, c := range p.Conns() {
		if c.ID() == id {
			return c
		}
	}
	t.Fatalf("no connection with ID %d", id)
	return nil
}

// waitBuffered waits until c holds at least n bytes in dir.
func waitBuffered(t *testing.T, c *Conn, dir Direction, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	require.NoError(t, c.WaitBuffered(ctx, dir, n))
}

// recv receives from ch, failing the test after waitLimit.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("nothing received after %v", waitLimit)
	}
	var zero T
	return zero
}

// requireQuiet checks that nothing arrives on ch during quietWindow.
func requireQuiet[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %v", v)
	case <-time.After(quietWindow):
	}
}

// requireDone waits for c to finish.
func requireDone(t *testing.T, c *Conn) {
	t.Helper()
	recv(t, c.Done())
	require.True(t, c.Closed())
}

// write writes s to c.
func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(waitLimit)))
	_, err := io.WriteString(c, s)
	require.NoError(t, err)
}

// readExactly reads len(want) bytes from c and checks they are want.
func readExactly(t *testing.T, c net.Conn, want string) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(waitLimit)))
	got := make([]byte, len(want))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
}

// readErr reads from c until it fails, within waitLimit, and returns the
// error; it checks that no byte arrives.
func readErr(t *testing.T, c net.Conn) error {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(waitLimit)))
	var buf [64]byte
	n, err := c.Read(buf[:])
	require.Zero(t, n, "unexpected bytes %q", buf[:n])
	require.Error(t, err)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "no error after %v", waitLimit)
	return err
}

// requireNoRead checks that nothing can be read from c during quietWindow.
func requireNoRead(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(quietWindow)))
	var buf [64]byte
	n, err := c.Read(buf[:])
	require.Zero(t, n, "unexpected bytes %q", buf[:n])
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}
