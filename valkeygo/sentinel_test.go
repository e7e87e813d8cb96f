package valkeygo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/valkeygo"
)

// TestSentinelAnnouncementSwitches_LocksFollowTheSentinelThatRanTheFailover:
// the user's valkey-go Sentinel client subscribes to one sentinel, which here
// never hears of the failover (it and the third sentinel are stopped with
// SIGSTOP, so valkey-go keeps naming the old primary for as long as the test
// runs); the sentinel that ran SENTINEL FAILOVER announces +switch-master.
// Locks made with NewSentinel name the new primary, renew every keep-alive
// lock there (all kept, their keys live there) and take a new lock there,
// although valkey-go itself never switched.
func TestSentinelAnnouncementSwitches_LocksFollowTheSentinelThatRanTheFailover(t *testing.T) {
	list, dir := os.Getenv("RESPIRE_REAL_SENTINEL70"), os.Getenv("RESPIRE_REAL_SENTINEL70_DIR")
	if list == "" || dir == "" {
		t.Skip("RESPIRE_REAL_SENTINEL70 not set: no real Sentinel setup (scripts/with-servers.sh starts one)")
	}
	realserver.Lock(t, list)
	sentinels, master, password := strings.Split(list, ","), os.Getenv("RESPIRE_REAL_SENTINEL70_MASTER"), os.Getenv("RESPIRE_REAL_SENTINEL70_PASSWORD")
	leader, deaf := sentinels[0], sentinels[1:]
	option := valkey.ClientOption{InitAddress: append(append([]string(nil), deaf...), leader), Password: password,
		DisableCache: true, Sentinel: valkey.SentinelOption{MasterSet: master, Password: password}}
	client, err := valkey.NewClient(option) // subscribes to deaf[0]
	if err != nil {
		t.Fatalf("Sentinel client: %v", err)
	}
	t.Cleanup(client.Close)
	locks, err := valkeygo.NewSentinel(client, option)
	if err != nil {
		t.Fatalf("NewSentinel: %v", err)
	}
	t.Cleanup(locks.Close)
	locks = locks.WithKeyPrefix(fmt.Sprintf("announce:%d:", time.Now().UnixNano()))
	old := onlyNode(t, client)
	fresh := otherDataNode(t, dir, old)
	var held []*lease.Lock
	for i := range 3 {
		lock, err := locks.Acquire(ctxFor(t), fmt.Sprintf("job-%d", i), 3*time.Second, lease.WithKeepAlive())
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		held = append(held, lock)
		waitFor(t, 20*time.Second, "the replica has "+lock.Key(), func() bool {
			return admin(fresh, password, "EXISTS", wireKey(lock)) == ":1\r\n"
		})
	}
	for _, addr := range deaf {
		freeze(t, dir, addr)
	}
	if got := admin(leader, password, "SENTINEL", "FAILOVER", master); got != "+OK\r\n" {
		t.Fatalf("SENTINEL FAILOVER = %q", got)
	}
	engine := leaseinternal.Driver(locks).Transport().(*conn.Engine)
	waitFor(t, 15*time.Second, "the locks named the new primary "+fresh, func() bool { return engine.IsPrimary(fresh) })
	time.Sleep(6 * time.Second) // two leases: every lock renewed on the new primary, or lost
	if node := onlyNode(t, client); node != old {
		t.Fatalf("the valkey-go client switched to %s although its sentinel is stopped: the test proves nothing", node)
	}
	for _, lock := range held {
		pttl := admin(fresh, password, "PTTL", wireKey(lock))
		if lock.Context().Err() != nil || !strings.HasPrefix(pttl, ":") || strings.HasPrefix(pttl, ":-") {
			t.Errorf("%s after the switch: context %v, PTTL on the new primary %q; want held and live there",
				lock.Key(), context.Cause(lock.Context()), pttl)
		}
		_ = lock.Close()
	}
	after, err := locks.Acquire(ctxFor(t), "after", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after the switch = %v", err)
	}
	if got := admin(fresh, password, "EXISTS", wireKey(after)); got != ":1\r\n" {
		t.Errorf("the lock taken after the switch is not on the new primary %s: EXISTS = %q", fresh, got)
	}
	_ = after.Close()
	for _, addr := range deaf {
		thaw(dir, addr)
	}
	waitFor(t, 30*time.Second, "the old primary reconfigured as a replica", func() bool {
		return strings.Contains(admin(old, password, "INFO", "replication"), "role:slave")
	})
}

// onlyNode returns the one node a Sentinel client names.
func onlyNode(t *testing.T, client valkey.Client) string {
	t.Helper()
	for addr := range client.Nodes() {
		return addr
	}
	t.Fatal("the Sentinel client names no node")
	return ""
}

// otherDataNode returns the data node of the Sentinel setup in dir that is
// not primary.
func otherDataNode(t *testing.T, dir, primary string) string {
	t.Helper()
	for _, node := range []string{"primary", "replica"} {
		if addr := "127.0.0.1:" + portIn(dir, node); addr != primary {
			return addr
		}
	}
	t.Fatalf("no data node other than %s in %s", primary, dir)
	return ""
}

func portIn(dir, node string) string {
	port, _ := os.ReadFile(filepath.Join(dir, node, "port"))
	return strings.TrimSpace(string(port))
}

// sentinelPid returns the pid of the sentinel listening at addr.
func sentinelPid(dir, addr string) int {
	for n := 1; n <= 9; n++ {
		node := fmt.Sprintf("sentinel%d", n)
		if "127.0.0.1:"+portIn(dir, node) == addr {
			raw, _ := os.ReadFile(filepath.Join(dir, node, "redis.pid"))
			pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
			return pid
		}
	}
	return 0
}

// freeze stops the sentinel at addr (SIGSTOP) until thaw or the test's end.
func freeze(t *testing.T, dir, addr string) {
	t.Helper()
	pid := sentinelPid(dir, addr)
	if pid <= 0 {
		t.Fatalf("no sentinel pid for %s in %s", addr, dir)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP sentinel %s: %v", addr, err)
	}
	t.Cleanup(func() { thaw(dir, addr) })
}

func thaw(dir, addr string) {
	if pid := sentinelPid(dir, addr); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}

// admin runs one command on a raw connection to addr ("" when unreachable).
func admin(addr, password string, args ...string) string {
	c, err := realserver.Dial(addr, password)
	if err != nil {
		return ""
	}
	defer c.Close()
	reply, _ := c.Do(args...)
	return reply
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wireKey is lock's key as the server stores it.
func wireKey(lock *lease.Lock) string { return (*actor.Lock)(lock).WireKey() }
