package lease

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/internal/realserver"
)

// realNodes are the real redis-server processes scripts/with-servers.sh
// started for failover tests: their addresses, password, and a directory
// with, per node, its start script, pid file and port.
type realNodes struct {
	addrs    []string
	password string
	dir      string
}

// realClusterNodes returns the real 3-primary/3-replica cluster, locked for
// this test (other packages' tests use it too), or skips.
func realClusterNodes(t *testing.T) *realNodes {
	t.Helper()
	addrs, password := realCluster70(t)
	dir := os.Getenv("RESPIRE_REAL_CLUSTER70_DIR")
	if dir == "" {
		t.Skip("RESPIRE_REAL_CLUSTER70_DIR not set: cannot kill and restart cluster nodes")
	}
	realserver.Lock(t, strings.Join(addrs, ","))
	return &realNodes{addrs: addrs, password: password, dir: dir}
}

// exec runs one admin command on addr and returns its RESP2 reply.
func (r *realNodes) exec(t *testing.T, addr string, args ...string) string {
	t.Helper()
	c, err := dialResp(addr, r.password)
	if err != nil {
		t.Fatalf("admin connection to %s: %v", addr, err)
	}
	defer c.conn.Close()
	reply, err := c.do(args...)
	if err != nil {
		t.Fatalf("%v on %s: %v", args, addr, err)
	}
	return reply
}

// tryExec is exec for a node that may be down: "" when it cannot answer.
func (r *realNodes) tryExec(addr string, args ...string) string {
	c, err := dialResp(addr, r.password)
	if err != nil {
		return ""
	}
	defer c.conn.Close()
	reply, _ := c.do(args...)
	return reply
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, masterID string
	master, failed     bool
	slots              []string
}

// nodes reads CLUSTER NODES from the first node that answers.
func (r *realNodes) nodes(t *testing.T) []clusterNode {
	t.Helper()
	for _, addr := range r.addrs {
		if reply := r.tryExec(addr, "CLUSTER", "NODES"); strings.HasPrefix(reply, "$") {
			return parseClusterNodes(reply)
		}
	}
	t.Fatal("no cluster node answers CLUSTER NODES")
	return nil
}

func parseClusterNodes(reply string) []clusterNode {
	var out []clusterNode
	for _, line := range strings.Split(reply, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		out = append(out, clusterNode{id: f[0], addr: addr, masterID: f[3],
			master: strings.Contains(f[2], "master"), failed: strings.Contains(f[2], "fail"), slots: f[8:]})
	}
	return out
}

// healthy reports whether every node answers with cluster_state:ok and
// every live primary has a replica whose link is up.
func (r *realNodes) healthy(t *testing.T) bool {
	for _, addr := range r.addrs {
		if !strings.Contains(r.tryExec(addr, "CLUSTER", "INFO"), "cluster_state:ok") {
			return false
		}
	}
	primaries := 0
	for _, n := range r.nodes(t) {
		if n.master && !n.failed && len(n.slots) > 0 {
			primaries++
			if !strings.Contains(r.tryExec(n.addr, "INFO", "replication"), "state=online") {
				return false
			}
		}
	}
	return primaries == 3
}

// waitHealthy waits (up to 30 s) until the cluster is healthy again.
func (r *realNodes) waitHealthy(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !r.healthy(t) {
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not become healthy: %+v", r.nodes(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shardOf returns the primary that serves key's slot and its replica.
func (r *realNodes) shardOf(t *testing.T, key string) (primary, replica clusterNode) {
	t.Helper()
	var slot int64
	if _, err := fmtSscanInt(r.exec(t, r.addrs[0], "CLUSTER", "KEYSLOT", key), &slot); err != nil {
		t.Fatal(err)
	}
	nodes := r.nodes(t)
	for _, n := range nodes {
		if n.master && servesSlot(n.slots, slot) {
			primary = n
		}
	}
	for _, n := range nodes {
		if n.masterID == primary.id && !n.failed {
			replica = n
		}
	}
	if primary.id == "" || replica.id == "" {
		t.Fatalf("no primary and replica for slot %d: %+v", slot, nodes)
	}
	return primary, replica
}

func servesSlot(ranges []string, slot int64) bool {
	for _, rg := range ranges {
		lo, hi, found := strings.Cut(rg, "-")
		a, err := strconv.ParseInt(lo, 10, 64)
		if err != nil {
			continue
		}
		b := a
		if found {
			b, _ = strconv.ParseInt(hi, 10, 64)
		}
		if a <= slot && slot <= b {
			return true
		}
	}
	return false
}

// nodeDir returns the with-servers directory of the node listening on addr.
func (r *realNodes) nodeDir(t *testing.T, addr string) string {
	t.Helper()
	_, port, _ := strings.Cut(addr, ":")
	dirs, _ := filepath.Glob(filepath.Join(r.dir, "*", "port"))
	for _, f := range dirs {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == port {
			return filepath.Dir(f)
		}
	}
	t.Fatalf("no node directory for %s", addr)
	return ""
}

// signal sends sig to the node listening on addr.
func (r *realNodes) signal(t *testing.T, addr string, sig syscall.Signal) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.nodeDir(t, addr), "redis.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("kill -%d %d (%s): %v", sig, pid, addr, err)
	}
}

// restart starts the node of addr again with its start script.
func (r *realNodes) restart(t *testing.T, addr string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(r.nodeDir(t, addr), "start")).CombinedOutput()
	if err != nil {
		t.Fatalf("restarting %s: %v: %s", addr, err, out)
	}
}

// ownership records, for the failover tests, when each lock stopped
// believing it holds its key and when an outsider took a key: two owners at
// once is an outsider win before the holder's keep-alive context ended.
type ownership struct {
	mu    sync.Mutex
	ended map[*Lock]time.Time
	wins  []outsiderWin
}

type outsiderWin struct {
	key string
	at  time.Time // the reply to the outsider's SET NX
}

// watch records when lock's keep-alive context ends.
func (o *ownership) watch(lock *Lock) {
	context.AfterFunc(lock.Context(), func() {
		o.mu.Lock()
		o.ended[lock] = time.Now()
		o.mu.Unlock()
	})
}

// contend runs an outsider that tries SET key intruder-n NX PX 3000 on every
// key every 100 ms until ctx ends, recording each success.
func (o *ownership) contend(ctx context.Context, client rueidis.Client, wireKeys []string) {
	for n := 0; ctx.Err() == nil; n++ {
		for _, key := range wireKeys {
			cmd := client.B().Set().Key(key).Value(fmt.Sprintf("intruder-%d", n)).Nx().PxMilliseconds(3000).Build()
			if ok, err := client.Do(ctx, cmd).AsBool(); err == nil && ok {
				o.mu.Lock()
				o.wins = append(o.wins, outsiderWin{key: key, at: time.Now()})
				o.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// check fails t for every outsider win on a lock's key while the lock's
// keep-alive context was still live, and reports how many locks were kept.
func (o *ownership) check(t *testing.T, locks []*Lock) (kept, lost int) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, lock := range locks {
		end, ended := o.ended[lock]
		for _, w := range o.wins {
			if w.key == lock.core().WireKey() && (!ended || w.at.Before(end)) {
				t.Errorf("two owners: an outsider took %s at %s while the lock's context was live (ended %v at %s)",
					w.key, w.at.Format("15:04:05.000"), ended, end.Format("15:04:05.000"))
			}
		}
		if ended {
			lost++
		} else {
			kept++
		}
	}
	return kept, lost
}
