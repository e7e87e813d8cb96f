package lease

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/internal/realserver"
)

// realSentinel returns a rueidis Sentinel client of the real Sentinel setup
// scripts/with-servers.sh starts (locked for this test), the sentinels'
// addresses and the password, or skips.
func realSentinel(t *testing.T) (rueidis.Client, []string, string) {
	t.Helper()
	list := os.Getenv("RESPIRE_REAL_SENTINEL70")
	if list == "" {
		t.Skip("RESPIRE_REAL_SENTINEL70 not set: no real Sentinel setup (the Makefile starts one)")
	}
	realserver.Lock(t, list)
	sentinels, password := strings.Split(list, ","), os.Getenv("RESPIRE_REAL_SENTINEL70_PASSWORD")
	return newSentinelClient(t, sentinels, password), sentinels, password
}

func newSentinelClient(t *testing.T, sentinels []string, password string) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: sentinels, Password: password, DisableCache: true,
		Sentinel: rueidis.SentinelOption{MasterSet: os.Getenv("RESPIRE_REAL_SENTINEL70_MASTER"), Password: password,
			TopologyRefreshInterval: time.Second}, // a missed +switch-master must not pin the client
	})
	if err != nil {
		t.Fatalf("Sentinel client: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

// primaryOf returns the address the client currently writes to.
func primaryOf(t *testing.T, client rueidis.Client) string {
	t.Helper()
	for addr := range client.Nodes() {
		return addr
	}
	t.Fatal("the Sentinel client lists no node")
	return ""
}

// TestSentinelFailover_SessionsFollowTheNewPrimary: locks on a Sentinel
// client, then SENTINEL FAILOVER. The old primary stays writable for
// seconds until Sentinel reconfigures it; a renewal confirmed there proves
// nothing, so every session moves to the new primary (fresh identity and
// capabilities) and each lock is kept there or reported lost before the
// outsider, who writes to the new primary, gets its key. A lock taken after
// the failover lands on the new primary.
func TestSentinelFailover_SessionsFollowTheNewPrimary(t *testing.T) {
	client, sentinels, password := realSentinel(t)
	nodes := &realNodes{password: password}
	locks := newLocks(t, client).WithKeyPrefix(fmt.Sprintf("sentinel:%d:", time.Now().UnixNano()))
	old := primaryOf(t, client)
	o := &ownership{ended: map[*Lock]time.Time{}}
	var held []*Lock
	for i := range 10 {
		lock, err := locks.Acquire(ctxT(t), fmt.Sprintf("job-%d", i), failoverLease, WithKeepAlive())
		if err != nil {
			t.Fatalf("Acquire on a Sentinel client = %v", err)
		}
		o.watch(lock)
		held = append(held, lock)
	}
	stop, done := startContending(t, o, newSentinelClient(t, sentinels, password), wireKeys(held))
	t.Logf("before the failover: %s", replicationLine(nodes, old))
	if got := nodes.exec(t, sentinels[0], "SENTINEL", "FAILOVER", os.Getenv("RESPIRE_REAL_SENTINEL70_MASTER")); got != "+OK\r\n" {
		t.Fatalf("SENTINEL FAILOVER = %q", got)
	}
	eventually(t, "the client switched to the new primary", func() bool { return primaryOf(t, client) != old })
	fresh := primaryOf(t, client)
	kept, lost := settle(t, o, held, stop, done)
	t.Logf("Sentinel failover %s -> %s: %d locks kept, %d reported lost (no two owners)", old, fresh, kept, lost)
	lock, err := locks.Acquire(ctxT(t), "after", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after the failover = %v", err)
	}
	if got := nodes.exec(t, fresh, "GET", lock.core().WireKey()); !strings.Contains(got, lock.Token().wire()) {
		t.Fatalf("the lock taken after the failover is not on the new primary %s: GET = %q", fresh, got)
	}
	if s := locks.Driver().StandaloneSession(); s == nil || s.Node() != fresh {
		t.Fatalf("the lock's session is on %v; want the new primary %s", s, fresh)
	}
	_ = lock.Close()
	eventually(t, "the old primary reconfigured as a replica", func() bool {
		return strings.Contains(nodes.tryExec(old, "INFO", "replication"), "role:slave")
	})
}
