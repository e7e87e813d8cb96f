package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// These tests run on the real processes scripts/with-servers.sh starts: a
// 3-primary/3-replica cluster and a Sentinel-managed primary/replica. An
// outsider contends for every key the whole time; each lock must keep its
// lock or have its keep-alive context ended before the outsider gets in.

const failoverLease = 3 * time.Second

// heldOnCluster acquires n keep-alive locks spread over every slot of the
// real cluster, watched by o.
func heldOnCluster(t *testing.T, locks *Locks, o *ownership, prefix string, n int) []*Lock {
	t.Helper()
	var held []*Lock
	for i := range n {
		lock, err := locks.Acquire(ctxT(t), fmt.Sprintf("%s%d", prefix, i), failoverLease, WithKeepAlive())
		if err != nil {
			t.Fatalf("Acquire %d = %v", i, err)
		}
		o.watch(lock)
		held = append(held, lock)
	}
	return held
}

func wireKeys(held []*Lock) []string {
	keys := make([]string, len(held))
	for i, l := range held {
		keys[i] = l.core().WireKey()
	}
	return keys
}

// settle lets renewals run for a while (real time: the servers' keys expire
// by the wall clock), then stops the outsider and checks every lock.
func settle(t *testing.T, o *ownership, held []*Lock, stop context.CancelFunc, done <-chan struct{}) (kept, lost int) {
	t.Helper()
	time.Sleep(2 * failoverLease) // the workload: at least three renewals of every lock
	stop()
	<-done
	kept, lost = o.check(t, held)
	for _, lock := range held {
		if lock.Context().Err() == nil && lock.State() != StateHeld {
			t.Errorf("a lock's keep-alive is live in state %v", lock.State())
		}
		_ = lock.Close()
	}
	return kept, lost
}

// startContending runs the outsider on its own client until the returned
// cancel is called.
func startContending(t *testing.T, o *ownership, client rueidis.Client, keys []string) (context.CancelFunc, <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); o.contend(ctx, client, keys) }()
	t.Cleanup(func() { cancel(); <-done })
	return cancel, done
}

// TestClusterFailover_ACoordinatedFailoverKeepsOrReportsEveryLock:
// CLUSTER FAILOVER on a replica while locks with keep-alive are held on
// every shard. The new primary holds the keys (replicated); a renewal to
// the old primary is answered MOVED and follows; no renewal that did not
// run counts as a loss. Each lock is kept, or reported lost before the
// outsider gets its key.
func TestClusterFailover_ACoordinatedFailoverKeepsOrReportsEveryLock(t *testing.T) {
	nodes := realClusterNodes(t)
	nodes.waitHealthy(t)
	locks := newLocks(t, newClient(t, nodes.addrs, "", nodes.password, true)).WithKeyPrefix(fmt.Sprintf("failover:%d:", time.Now().UnixNano()))
	o := &ownership{ended: map[*Lock]time.Time{}}
	held := heldOnCluster(t, locks, o, "job-", 24)
	stop, done := startContending(t, o, newOutsider(t, nodes.addrs, "", nodes.password), wireKeys(held))
	primary, replica := nodes.shardOf(t, held[0].core().WireKey())
	t.Logf("before the failover: %s", replicationLine(nodes, primary.addr))
	start := time.Now()
	if got := nodes.exec(t, replica.addr, "CLUSTER", "FAILOVER"); got != "+OK\r\n" {
		t.Fatalf("CLUSTER FAILOVER = %q", got)
	}
	eventually(t, "the replica promoted", func() bool {
		return strings.Contains(nodes.exec(t, replica.addr, "INFO", "replication"), "role:master")
	})
	t.Logf("failover of %s to %s took %v", primary.addr, replica.addr, time.Since(start))
	kept, lost := settle(t, o, held, stop, done)
	t.Logf("coordinated failover: %d locks kept, %d reported lost (no two owners)", kept, lost)
	if lost > 0 {
		t.Errorf("%d healthy locks lost in a coordinated failover (their keys replicated)", lost)
	}
	nodes.waitHealthy(t)
}

// TestClusterFailover_AKilledPrimaryIsReplacedAndItsSlotsServedAgain: a
// primary is killed (SIGKILL) and its replica promoted. Locks on other
// shards are kept (CLUSTERDOWN while its slots are uncovered did not run:
// retried); locks on the dead shard are kept if their keys replicated, or
// reported lost in time; and new acquisitions on that shard work again
// soon after the promotion: the slot map is read again after the node
// failed (no MOVED ever comes from a dead primary).
func TestClusterFailover_AKilledPrimaryIsReplacedAndItsSlotsServedAgain(t *testing.T) {
	nodes := realClusterNodes(t)
	nodes.waitHealthy(t)
	locks := newLocks(t, newClient(t, nodes.addrs, "", nodes.password, true)).WithKeyPrefix(fmt.Sprintf("killed:%d:", time.Now().UnixNano()))
	o := &ownership{ended: map[*Lock]time.Time{}}
	held := heldOnCluster(t, locks, o, "job-", 24)
	stop, done := startContending(t, o, newOutsider(t, nodes.addrs, "", nodes.password), wireKeys(held))
	primary, replica := nodes.shardOf(t, held[0].core().WireKey())
	t.Logf("before the kill: %s (what the replica has not acknowledged is lost with the primary)", replicationLine(nodes, primary.addr))
	nodes.signal(t, primary.addr, syscall.SIGKILL)
	t.Cleanup(func() { nodes.restart(t, primary.addr); nodes.waitHealthy(t) })
	eventually(t, "the replica promoted", func() bool {
		return strings.Contains(nodes.tryExec(replica.addr, "CLUSTER", "INFO"), "cluster_state:ok") &&
			strings.Contains(nodes.tryExec(replica.addr, "INFO", "replication"), "role:master")
	})
	promoted := time.Now()
	var lock *Lock
	eventually(t, "an acquisition on the failed-over shard", func() bool {
		var err error
		lock, err = locks.Acquire(ctxFor(t, time.Second), strings.TrimPrefix(held[0].core().WireKey(), locks.KeyPrefix())+"-new", time.Minute)
		return err == nil
	})
	t.Logf("first acquisition on the failed-over shard %v after the promotion", time.Since(promoted))
	if took := time.Since(promoted); took > 5*time.Second {
		t.Errorf("acquisitions on the failed-over shard took %v to work again", took)
	}
	_ = lock.Close()
	kept, lost := settle(t, o, held, stop, done)
	t.Logf("killed primary: %d locks kept, %d reported lost (no two owners)", kept, lost)
}

// TestClusterResharding_LocksFollowAMigratingSlot: a slot with a held lock
// migrates with real CLUSTER SETSLOT … MIGRATING/IMPORTING and MIGRATE.
// While the key is on the target the renewal follows ASK (ASKING first);
// after SETSLOT … NODE it follows MOVED; the release then deletes it once.
func TestClusterResharding_LocksFollowAMigratingSlot(t *testing.T) {
	nodes := realClusterNodes(t)
	nodes.waitHealthy(t)
	locks := newLocks(t, newClient(t, nodes.addrs, "", nodes.password, true)).WithKeyPrefix(fmt.Sprintf("reshard:%d:", time.Now().UnixNano()))
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "job", failoverLease, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	source, _ := nodes.shardOf(t, lock.core().WireKey())
	target := otherPrimary(t, nodes, source)
	var slot int64
	fmtSscanInt(nodes.exec(t, source.addr, "CLUSTER", "KEYSLOT", lock.core().WireKey()), &slot)
	s := fmt.Sprint(slot)
	mustOK(t, nodes.exec(t, target.addr, "CLUSTER", "SETSLOT", s, "IMPORTING", source.id))
	mustOK(t, nodes.exec(t, source.addr, "CLUSTER", "SETSLOT", s, "MIGRATING", target.id))
	host, port, _ := strings.Cut(target.addr, ":")
	mustOK(t, nodes.exec(t, source.addr, "MIGRATE", host, port, "", "0", "5000", "AUTH", nodes.password, "KEYS", lock.core().WireKey()))
	if ok, err := lock.ResetExpiry(ctx, failoverLease); !ok || err != nil { // ASK → ASKING + renewal on the target
		t.Fatalf("ResetExpiry during the migration = %v, %v", ok, err)
	}
	for _, n := range nodes.nodes(t) {
		if n.master && !n.failed {
			mustOK(t, nodes.exec(t, n.addr, "CLUSTER", "SETSLOT", s, "NODE", target.id))
		}
	}
	if ok, err := lock.ResetExpiry(ctx, failoverLease); !ok || err != nil { // MOVED → the target
		t.Fatalf("ResetExpiry after the migration = %v, %v", ok, err)
	}
	if out, err := lock.Release(ctx); out != Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
	for _, n := range []clusterNode{source, target} {
		if got := nodes.exec(t, n.addr, "EXISTS", lock.core().WireKey()); got != ":0\r\n" && !strings.HasPrefix(got, "-MOVED") {
			t.Fatalf("EXISTS on %s = %q after the release", n.addr, got)
		}
	}
	if !errors.Is(context.Cause(lock.Context()), ErrReleased) {
		t.Fatalf("keep-alive ended with %v; want ErrReleased", context.Cause(lock.Context()))
	}
}

func otherPrimary(t *testing.T, nodes *realNodes, not clusterNode) clusterNode {
	t.Helper()
	for _, n := range nodes.nodes(t) {
		if n.master && !n.failed && n.id != not.id && len(n.slots) > 0 {
			return n
		}
	}
	t.Fatal("no other primary")
	return clusterNode{}
}

func mustOK(t *testing.T, reply string) {
	t.Helper()
	if reply != "+OK\r\n" {
		t.Fatalf("admin command = %q; want +OK", reply)
	}
}

// replicationLine returns the primary's INFO replication line of its first
// replica (offset and lag), for the tests to state the replication window
// they ran with.
func replicationLine(nodes *realNodes, primary string) string {
	for _, line := range strings.Split(nodes.tryExec(primary, "INFO", "replication"), "\r\n") {
		if strings.HasPrefix(line, "slave0:") {
			return line
		}
	}
	return "(no replica line)"
}
