package realserver

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Private is a redis-server that one test started for itself, on a free
// loopback port with a random password, for faults that must not touch the
// servers other tests share (a restart on the same port, REPLICAOF, a
// stalled replica). It is stopped when the test ends.
type Private struct {
	Addr     string // 127.0.0.1:port
	Password string
	Dir      string // its working directory (logs)
	port     int
	args     []string
	cmd      *exec.Cmd
	exited   chan struct{} // closed once cmd exited (it is waited for by its own goroutine)
}

// StartPrivate starts redis-server with extra configuration args (for
// example "--min-replicas-to-write", "1"), or skips the test when no
// redis-server is installed (make test installs one). It blocks until the
// server answers PING.
func StartPrivate(t testing.TB, args ...string) *Private {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed: make test installs it")
	}
	secret := make([]byte, 8)
	_, _ = rand.Read(secret)
	p := &Private{Password: "respire-" + hex.EncodeToString(secret), Dir: t.TempDir(), args: args}
	t.Cleanup(func() { p.Stop(t) })
	var failures []string
	for range 3 { // a free port may be taken again before the server binds it
		p.port = freePort(t)
		p.Addr = "127.0.0.1:" + strconv.Itoa(p.port)
		why := p.start()
		if why == "" {
			return p
		}
		failures = append(failures, why)
	}
	t.Fatalf("redis-server did not start: %v", failures)
	return nil
}

// Start (re)starts the server on its port with its configuration; it
// blocks until the server answers PING.
func (p *Private) Start(t testing.TB) {
	t.Helper()
	if why := p.start(); why != "" {
		t.Fatal(why)
	}
}

// start starts the server and waits until it answers, or returns why it
// did not (the server is then stopped).
func (p *Private) start() string {
	args := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(p.port),
		"--requirepass", p.Password, "--masterauth", p.Password, "--save", "", "--appendonly", "no",
		"--dir", p.Dir, "--logfile", filepath.Join(p.Dir, "redis.log")}, p.args...)
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		return fmt.Sprintf("starting redis-server: %v", err)
	}
	p.cmd = cmd
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.exited = exited
	deadline := time.Now().Add(10 * time.Second)
	for {
		if reply, err := p.Exec("PING"); err == nil && reply == "+PONG\r\n" {
			return ""
		}
		select {
		case <-exited: // the port was taken, or a bad argument
			log, _ := os.ReadFile(filepath.Join(p.Dir, "redis.log"))
			p.cmd = nil
			return fmt.Sprintf("redis-server on %s exited; its log:\n%s", p.Addr, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(p.Dir, "redis.log"))
			p.stop()
			return fmt.Sprintf("redis-server on %s did not answer PING in 10s; its log:\n%s", p.Addr, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL: nothing is saved) and waits for it.
func (p *Private) Stop(t testing.TB) {
	t.Helper()
	p.stop()
}

func (p *Private) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	p.cmd = nil
}

// Pid returns the server process's pid, 0 when stopped.
func (p *Private) Pid() int {
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exec runs one command on a fresh authenticated RESP2 connection and
// returns its whole reply as the server sent it ("+OK\r\n", ":1\r\n",
// "$5\r\nhello\r\n", arrays included), or the connection's error.
func (p *Private) Exec(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", p.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	if _, err := fmt.Fprint(c, encode("AUTH", p.Password)); err != nil {
		return "", err
	}
	if reply, err := readReply(r); err != nil || reply != "+OK\r\n" {
		return "", fmt.Errorf("AUTH: %q %v", reply, err)
	}
	if _, err := fmt.Fprint(c, encode(args...)); err != nil {
		return "", err
	}
	return readReply(r)
}

// MustExec is Exec that fails the test on a connection error.
func (p *Private) MustExec(t testing.TB, args ...string) string {
	t.Helper()
	reply, err := p.Exec(args...)
	if err != nil {
		t.Fatalf("%v on %s: %v", args, p.Addr, err)
	}
	return reply
}

// readReply reads one RESP2 reply, whole, as raw text.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 {
		return line, err
	}
	n, _ := strconv.Atoi(strings.TrimRight(line[1:], "\r\n"))
	switch line[0] {
	case '$':
		if n < 0 {
			return line, nil
		}
		body := make([]byte, n+2)
		_, err := io.ReadFull(r, body)
		return line + string(body), err
	case '*':
		out := line
		for range max(n, 0) {
			item, err := readReply(r)
			out += item
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
	return line, nil
}

// encode renders a command as a RESP array of bulk strings.
func encode(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// freePort returns a loopback port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
