package coordination

import (
	"bufio"
	"fmt"
	"io"
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

// realNode is one redis-server process started by scripts/with-servers.sh:
// its directory holds start (restarts it), redis.pid and port.
type realNode struct {
	name, dir, addr, password string
}

func newRealNode(t *testing.T, base, name, password string) realNode {
	t.Helper()
	dir := filepath.Join(base, name)
	port, err := os.ReadFile(filepath.Join(dir, "port"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return realNode{name: name, dir: dir, addr: "127.0.0.1:" + strings.TrimSpace(string(port)), password: password}
}

func (n realNode) pid(t *testing.T) int {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(n.dir, "redis.pid"))
	if err != nil {
		t.Fatalf("%s: %v", n.name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(text)))
	if err != nil {
		t.Fatalf("%s: pid file: %v", n.name, err)
	}
	return pid
}

// signal sends sig to the node's process.
func (n realNode) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(n.pid(t), sig); err != nil {
		t.Fatalf("kill -%v %s: %v", sig, n.name, err)
	}
}

// alive reports whether the node's process exists and is not a zombie (a
// daemonized server is a child of PID 1, which need not reap it).
func (n realNode) alive(t *testing.T) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.pid(t)))
	if err != nil {
		return syscall.Kill(n.pid(t), 0) == nil // no /proc: trust kill -0
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// restart runs the node's start script (it daemonizes).
func (n realNode) restart(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(filepath.Join(n.dir, "start")).CombinedOutput(); err != nil {
		t.Fatalf("restart %s: %v: %s", n.name, err, out)
	}
}

// do sends one command on a fresh connection (after AUTH) and returns the
// reply as text: simple strings and bulk strings bare, integers ":n",
// errors "-...". Arrays are not needed by these tests and are an error.
func (n realNode) do(args ...string) (string, error) {
	c, err := n.open()
	if err != nil {
		return "", err
	}
	defer c.close()
	return c.do(args...)
}

// adminConn is one authenticated connection to a node.
type adminConn struct {
	c net.Conn
	r *bufio.Reader
}

// open connects and authenticates.
func (n realNode) open() (*adminConn, error) {
	c, err := net.DialTimeout("tcp", n.addr, time.Second)
	if err != nil {
		return nil, err
	}
	a := &adminConn{c: c, r: bufio.NewReader(c)}
	if n.password != "" {
		if reply, err := a.do("AUTH", n.password); err != nil || reply != "OK" {
			c.Close()
			return nil, fmt.Errorf("AUTH: %q, %v", reply, err)
		}
	}
	return a, nil
}

// do sends one command and reads its reply (see realNode.do), within 5 s.
func (a *adminConn) do(args ...string) (string, error) {
	if err := a.c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	return roundTrip(a.c, a.r, args...)
}

func (a *adminConn) close() { a.c.Close() }

func roundTrip(c net.Conn, r *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-', ':':
		return line, nil
	case '$':
		size, _ := strconv.Atoi(line[1:])
		if size < 0 {
			return "", nil
		}
		buf := make([]byte, size+2)
		_, err := io.ReadFull(r, buf)
		return string(buf[:size]), err
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// must is do that fails the test on a transport error.
func (n realNode) must(t *testing.T, args ...string) string {
	t.Helper()
	reply, err := n.do(args...)
	if err != nil {
		t.Fatalf("%s %q: %v", n.name, args, err)
	}
	return reply
}

// realCluster is the 6-node redis-server 7.0 cluster of with-servers.sh.
type realCluster struct {
	list     string // the comma-separated addresses, as in the environment
	password string
	nodes    []realNode
}

// openRealCluster returns the real cluster from the environment, or skips.
// It takes the cross-package lock on the address list and waits until the
// cluster is healthy.
func openRealCluster(t *testing.T) realCluster {
	t.Helper()
	list, base := os.Getenv("RESPIRE_REAL_CLUSTER70"), os.Getenv("RESPIRE_REAL_CLUSTER70_DIR")
	if list == "" || base == "" {
		t.Skip("RESPIRE_REAL_CLUSTER70[_DIR] not set: no real redis-server 7.0 cluster (the Makefile starts one)")
	}
	lockRealServer(t, list)
	c := realCluster{list: list, password: os.Getenv("RESPIRE_REAL_CLUSTER70_PASSWORD")}
	for i := 1; i <= 6; i++ {
		c.nodes = append(c.nodes, newRealNode(t, base, fmt.Sprintf("node%d", i), c.password))
	}
	c.waitHealthy(t)
	return c
}

func (c realCluster) addrs() []string { return strings.Split(c.list, ",") }

func (c realCluster) byAddr(addr string) (realNode, bool) {
	for _, n := range c.nodes {
		if n.addr == addr {
			return n, true
		}
	}
	return realNode{}, false
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, master string
	flags            []string
	slots            [][2]int
}

func (n clusterNode) has(flag string) bool {
	for _, f := range n.flags {
		if f == flag {
			return true
		}
	}
	return false
}

func parseClusterNodes(text string) []clusterNode {
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := clusterNode{id: f[0], addr: addr, flags: strings.Split(f[2], ","), master: f[3]}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue // a slot being migrated or imported
			}
			lo, hi, found := strings.Cut(s, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if found {
				b, _ = strconv.Atoi(hi)
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	return out
}

// shard returns the primary that owns slot and its replica, as a live node
// sees them.
func (c realCluster) shard(t *testing.T, slot int) (primary, replica realNode) {
	t.Helper()
	nodes := parseClusterNodes(c.nodes[0].must(t, "CLUSTER", "NODES"))
	var primaryID string
	for _, n := range nodes {
		for _, r := range n.slots {
			if n.has("master") && r[0] <= slot && slot <= r[1] {
				primaryID, primary, _ = n.id, mustNode(t, c, n.addr), true
			}
		}
	}
	for _, n := range nodes {
		if primaryID != "" && n.master == primaryID {
			return primary, mustNode(t, c, n.addr)
		}
	}
	t.Fatalf("no primary with a replica for slot %d in %+v", slot, nodes)
	return realNode{}, realNode{}
}

func mustNode(t *testing.T, c realCluster, addr string) realNode {
	t.Helper()
	n, ok := c.byAddr(addr)
	if !ok {
		t.Fatalf("cluster node %s is not one of %s", addr, c.list)
	}
	return n
}

// healthy reports nil when every node answers with cluster_state:ok, every
// node is known to all as neither failing nor in handshake, and each of the
// three slot-owning primaries has a replica with an online link.
func (c realCluster) healthy(live []realNode) error {
	for _, n := range live {
		info, err := n.do("CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: CLUSTER INFO: %v %q", n.name, err, firstLine(info))
		}
	}
	text, err := live[0].do("CLUSTER", "NODES")
	if err != nil {
		return err
	}
	masters := 0
	for _, n := range parseClusterNodes(text) {
		for _, bad := range []string{"fail", "fail?", "handshake", "noaddr"} {
			if n.has(bad) {
				return fmt.Errorf("%s is flagged %s", n.addr, bad)
			}
		}
		if !n.has("master") || len(n.slots) == 0 {
			continue
		}
		masters++
		node, ok := c.byAddr(n.addr)
		if !ok {
			return fmt.Errorf("unknown primary %s", n.addr)
		}
		repl, err := node.do("INFO", "replication")
		if err != nil || !strings.Contains(repl, "state=online") {
			return fmt.Errorf("primary %s has no online replica: %v", node.name, err)
		}
	}
	if masters != 3 {
		return fmt.Errorf("%d slot-owning primaries; want 3", masters)
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// waitHealthy waits up to 60 s until all six nodes are up and healthy.
func (c realCluster) waitHealthy(t *testing.T) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = c.healthy(c.nodes); err == nil {
			return
		}
	}
	t.Fatalf("the real cluster did not become healthy: %v", err)
}

// eventually retries fn every 100 ms for up to timeout.
func eventually(t *testing.T, what string, timeout time.Duration, fn func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = fn(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}
