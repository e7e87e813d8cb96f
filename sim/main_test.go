package sim

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m, leakcheck.RueidisBackground()...)
}

// wire is a raw RESP connection for byte-exact assertions.
type wire struct {
	t  testing.TB
	nc net.Conn
	r  *bufio.Reader
}

func dial(t testing.TB, addr string) *wire {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wire{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (w *wire) send(args ...string) {
	w.t.Helper()
	if _, err := w.nc.Write(encodeCommand(args...)); err != nil {
		w.t.Fatalf("write %q: %v", args, err)
	}
}

// do sends one command and returns its whole reply as wire bytes.
func (w *wire) do(args ...string) string {
	w.t.Helper()
	w.send(args...)
	return w.read()
}

func (w *wire) read() string {
	w.t.Helper()
	w.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	s, err := readReplyBytes(w.r)
	if err != nil {
		w.t.Fatalf("read reply: %v (got %q)", err, s)
	}
	return s
}

// eof reports whether the server closed the connection without sending more.
func (w *wire) eof() bool {
	w.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := w.r.ReadByte()
	return err != nil && !isTimeout(err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func readReplyBytes(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 {
		return line, err
	}
	n, _ := strconv.Atoi(strings.TrimRight(line[1:], "\r\n"))
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return line, nil
		}
		buf := make([]byte, n+2)
		_, err := ioReadFull(r, buf)
		return line + string(buf), err
	case '*', '~', '>', '%', '|':
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		out := line
		for range max(n, 0) {
			s, err := readReplyBytes(r)
			out += s
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
	return line, nil
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func startSim(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testEpoch is the start of every virtual clock in these tests.
var testEpoch = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
