package lease

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// privateRedis is a redis-server process of one test's own, on a free
// loopback port with a password, so the test may stop and restart it on the
// same port without disturbing the shared servers of scripts/with-servers.sh.
type privateRedis struct {
	addr, password string
	port           int
	dir            string
	cmd            *exec.Cmd
	exited         chan struct{}
}

// startPrivateRedis starts a private redis-server (no persistence), or skips
// when the real servers of scripts/with-servers.sh are not in use. It is
// stopped when the test ends.
func startPrivateRedis(t *testing.T) *privateRedis {
	t.Helper()
	realRedis70(t) // skips without the real servers (and their redis-server)
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skipf("no redis-server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &privateRedis{addr: fmt.Sprintf("127.0.0.1:%d", port), password: "private-" + strconv.Itoa(os.Getpid()),
		port: port, dir: t.TempDir()}
	r.start(t, bin)
	t.Cleanup(r.stop)
	return r
}

func (r *privateRedis) start(t *testing.T, bin string) {
	t.Helper()
	var out bytes.Buffer
	r.cmd = exec.Command(bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--requirepass", r.password,
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--daemonize", "no")
	r.cmd.Stdout, r.cmd.Stderr = &out, &out
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	r.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(r.cmd, r.exited)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := dialResp(r.addr, r.password); err == nil {
			if reply, err := c.do("PING"); err == nil && reply == "+PONG\r\n" {
				c.conn.Close()
				return
			}
			c.conn.Close()
		}
		select {
		case <-r.exited:
			t.Fatalf("redis-server on %s exited: %s", r.addr, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer: %s", r.addr, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restart stops the server (its data goes with it) and starts it again on
// the same port.
func (r *privateRedis) restart(t *testing.T) {
	t.Helper()
	r.stop()
	r.start(t, r.cmd.Path)
}

func (r *privateRedis) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.exited
}

// exec runs one command on a fresh admin connection and returns its reply.
func (r *privateRedis) exec(t *testing.T, args ...string) string {
	t.Helper()
	c, err := dialResp(r.addr, r.password)
	if err != nil {
		t.Fatalf("admin connection: %v", err)
	}
	defer c.conn.Close()
	reply, err := c.do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return reply
}
