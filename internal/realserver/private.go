package realserver

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// StartPrivate starts a redis-server of the test's own, for faults no
// shared server may see (a busy script, a DEBUG command): the redis-server
// on PATH (scripts/with-servers.sh installs Debian's 7.0), as a child
// process on a free loopback port, with a random password, no persistence
// and args appended to its command line. It blocks until the server
// answers PING (at most 10 s), and the server is killed (and waited for)
// when the test ends. It skips the test when RESPIRE_REAL_REDIS70 is unset
// (the real servers are not in use: plain `go test`) or redis-server is
// missing.
func StartPrivate(t testing.TB, args ...string) (addr, password string) {
	t.Helper()
	if os.Getenv("RESPIRE_REAL_REDIS70") == "" {
		t.Skip("RESPIRE_REAL_REDIS70 not set: the real servers are not in use (run under scripts/with-servers.sh)")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server on PATH")
	}
	var secret [8]byte
	_, _ = rand.Read(secret[:])
	password = "private-" + hex.EncodeToString(secret[:])
	var failures []string
	for range 3 { // a free port may be taken again before the server binds it
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		why := startServer(t, bin, port, password, args)
		if why == "" {
			return addr, password
		}
		failures = append(failures, why)
	}
	t.Fatalf("redis-server did not start: %v", failures)
	return "", ""
}

// startServer starts redis-server on port and waits until it answers, or
// returns why it did not (the server is then gone).
func startServer(t testing.TB, bin string, port int, password string, args []string) string {
	cmdArgs := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--requirepass", password,
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--daemonize", "no"}, args...)
	cmd := exec.Command(bin, cmdArgs...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err.Error()
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for !answersPing(addr, password) {
		select {
		case <-exited:
			return "exited: " + out.String()
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return "no answer within 10s: " + out.String()
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(stop)
	return ""
}

// answersPing reports whether the server at addr authenticates password
// and answers PING.
func answersPing(addr, password string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n*1\r\n$4\r\nPING\r\n", len(password), password)
	r := bufio.NewReader(c)
	auth, err1 := r.ReadString('\n')
	pong, err2 := r.ReadString('\n')
	return err1 == nil && err2 == nil && auth == "+OK\r\n" && pong == "+PONG\r\n"
}

// freePort returns a loopback TCP port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer is a bytes.Buffer safe for the child's output and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
