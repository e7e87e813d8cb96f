package coordination

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startPrivateServer starts a redis-server of this test's own on a free
// loopback port, with a random password, persistence off and the extra
// config lines given (on stdin, so the password is on no command line),
// and stops it (SIGKILL, even when stopped) when the test ends. The shared
// servers of scripts/with-servers.sh are never touched: a test that
// reconfigures a server, stops a replica or blocks a connection does it
// here. It skips unless with-servers.sh runs the tests (RESPIRE_REAL_REDIS70
// set) and redis-server is in PATH.
func startPrivateServer(t *testing.T, name string, extra ...string) realNode {
	t.Helper()
	return startPrivateServerWithPassword(t, name, randomHex(t), extra...)
}

// launchPrivate starts one redis-server process and waits until it answers
// PING.
func launchPrivate(t *testing.T, bin, name, password string, extra []string) (realNode, error) {
	port, err := freePort()
	if err != nil {
		return realNode{}, err
	}
	dir := t.TempDir()
	conf := append([]string{
		"bind 127.0.0.1", "port " + strconv.Itoa(port), "requirepass " + password, "masterauth " + password,
		`save ""`, "appendonly no", "daemonize no", "dir " + dir,
		"pidfile " + filepath.Join(dir, "redis.pid"), "logfile " + filepath.Join(dir, "redis.log"),
	}, extra...)
	cmd := exec.Command(bin, "-")
	cmd.Stdin = strings.NewReader(strings.Join(conf, "\n") + "\n")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives the test binary
	if err := cmd.Start(); err != nil {
		return realNode{}, err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	kill := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	n := realNode{name: name, dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), password: password}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) { // readiness poll
		reply, err := n.do("PING")
		if err == nil && reply == "PONG" {
			if _, err := os.Stat(filepath.Join(dir, "redis.pid")); err == nil {
				break
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			return realNode{}, fmt.Errorf("%s exited: %s", n.addr, lastLines(string(log), 5))
		default:
		}
		if time.Now().After(deadline) {
			kill()
			return realNode{}, fmt.Errorf("%s did not answer PING: %v", n.addr, err)
		}
	}
	t.Cleanup(kill)
	return n, nil
}

// startPrivateReplicated starts a private primary with the config lines
// given and one replica of it, and waits until the replica is online.
func startPrivateReplicated(t *testing.T, primaryConf ...string) (primary, replica realNode) {
	t.Helper()
	primary = startPrivateServer(t, "primary", primaryConf...)
	host, port, _ := net.SplitHostPort(primary.addr)
	replica = startPrivateServerWithPassword(t, "replica", primary.password, "replicaof "+host+" "+port)
	eventually(t, "the private replica online", 15*time.Second, func() error {
		if repl, err := primary.do("INFO", "replication"); err != nil || !strings.Contains(repl, "state=online") {
			return fmt.Errorf("INFO replication: %v %q", err, repl)
		}
		return nil
	})
	return primary, replica
}

// startPrivateServerWithPassword is startPrivateServer with a given
// password (a replica shares its primary's: masterauth = requirepass).
func startPrivateServerWithPassword(t *testing.T, name, password string, extra ...string) realNode {
	t.Helper()
	if os.Getenv("RESPIRE_REAL_REDIS70") == "" {
		t.Skip("RESPIRE_REAL_REDIS70 not set: private servers are started only under scripts/with-servers.sh")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not in PATH")
	}
	var lastErr error
	for range 3 {
		n, err := launchPrivate(t, bin, name, password, extra)
		if err == nil {
			return n
		}
		lastErr = err
	}
	t.Fatalf("starting private redis-server %s: %v", name, lastErr)
	return realNode{}
}

// infoField returns the value of field in an INFO section's text, or "".
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// freePort is a loopback TCP port nobody listened on a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
