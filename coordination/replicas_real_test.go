package coordination

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/wire"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// clusterCoordinator is a Coordinator on the real cluster with a key prefix
// of its own (the counters persist for the cluster's lifetime).
func clusterCoordinator(t *testing.T, c realCluster) (*Coordinator, string) {
	t.Helper()
	prefix := fmt.Sprintf("coordination-%s:%d:", t.Name(), time.Now().UnixNano())
	return newCoordinator(t, lockClient(t, c.addrs(), c.password), prefix), prefix
}

// stopUntilCleanup SIGSTOPs n and, when the test ends, SIGCONTs it and
// waits until the cluster is healthy again.
func stopUntilCleanup(t *testing.T, c realCluster, n realNode) {
	t.Helper()
	n.signal(t, syscall.SIGSTOP)
	t.Cleanup(func() {
		n.signal(t, syscall.SIGCONT)
		c.waitHealthy(t)
	})
}

// On the real cluster, with hash-tagged keys: WithReplicas(1, 1s) hands the
// token out while the shard's replica acknowledges; with the replica stopped
// WAIT reports 0 after its timeout, the token is refused and the lease is
// deleted. Meanwhile a WAIT on a connection whose last command ran before
// the script still counts the stopped replica: the server waits for the
// replication offset it recorded for that connection, which is why the WAIT
// must ride the script's own connection, right after the script.
func TestFencingCounter_WaitRefusesATokenNotReplicated(t *testing.T) {
	cluster := openRealCluster(t)
	c, prefix := clusterCoordinator(t, cluster)
	primary, replica := cluster.shard(t, sim.Slot(prefix+leaseKey))
	t.Logf("shard of %s: primary %s (%s), replica %s (%s)", leaseKey, primary.name, primary.addr, replica.name, replica.addr)

	lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, 30*time.Second, WithReplicas(1, time.Second))
	if err != nil || lock.FencingToken() != 1 {
		t.Fatalf("Acquire WithReplicas(1, 1s) on a healthy shard = %v, %v; want token 1", lock, err)
	}
	if out, err := lock.Release(ctxT(t)); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
	earlier := openAcknowledged(t, primary) // its last command predates what follows

	stopUntilCleanup(t, cluster, replica)
	start := time.Now()
	attempt, err := c.TryAcquire(ctxT(t), leaseKey, counterKey, 30*time.Second, WithReplicas(1, time.Second))
	elapsed := time.Since(start)
	var nr *NotReplicatedError
	if attempt.Acquired() || !errors.Is(err, ErrNotReplicated) || !errors.As(err, &nr) || nr.Acknowledged != 0 || !nr.Released {
		t.Fatalf("TryAcquire with the replica stopped = %v, %v; want ErrNotReplicated, 0 acknowledged, released", attempt.Acquired(), err)
	}
	t.Logf("%v (after %v)", err, elapsed.Round(time.Millisecond))
	if elapsed < time.Second || elapsed > 3*time.Second {
		t.Fatalf("refused after %v; want about the 1s WAIT timeout", elapsed)
	}
	if got := primary.must(t, "EXISTS", prefix+leaseKey); got != ":0" {
		t.Fatalf("lease EXISTS on the primary = %s; want :0", got)
	}
	if got := primary.must(t, "GET", prefix+counterKey); got != "2" {
		t.Fatalf("counter on the primary = %q; want 2 (the refused token is spent)", got)
	}
	if got, err := earlier.do("WAIT", "1", "100"); got != ":1" || err != nil {
		t.Fatalf("WAIT 1 100 on a connection last used before the script = %s, %v; want :1", got, err)
	}
	t.Log("a WAIT on a connection last used before the script counts the stopped replica: it must ride the script's connection")
}

// openAcknowledged opens a connection to primary and returns once a replica
// acknowledged everything up to the connection's last command.
func openAcknowledged(t *testing.T, primary realNode) *adminConn {
	t.Helper()
	a, err := primary.open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.close)
	if got, err := a.do("WAIT", "1", "5000"); got != ":1" || err != nil {
		t.Fatalf("WAIT 1 5000 on a healthy shard = %s, %v; want :1", got, err)
	}
	return a
}

// A failover to a replica that missed the latest increments rolls the
// counter back, and nothing in the library can notice (WAIT off). The
// replica R is stopped and the primary P drops its replication link (a
// SIGSTOP alone is not enough: bytes P already wrote into R's socket are
// still delivered when R resumes), tokens are handed out on P alone, P is
// killed, R resumes and takes over; the next token is one that was already
// handed out. P is restarted and rejoins as R's replica.
func TestFencingCounter_FailoverToALaggingReplicaRollsTheCounterBack(t *testing.T) {
	cluster := openRealCluster(t)
	c, prefix := clusterCoordinator(t, cluster)
	primary, replica := cluster.shard(t, sim.Slot(prefix+leaseKey))
	t.Logf("shard of %s: primary %s, replica %s", leaseKey, primary.name, replica.name)
	t.Cleanup(func() { restoreShard(t, cluster, primary, replica) })

	for want := int64(1); want <= 2; want++ { // tokens the replica acknowledged
		lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, 30*time.Second, WithReplicas(1, 2*time.Second))
		if err != nil || lock.FencingToken() != want {
			t.Fatalf("replicated Acquire = %v, %v; want token %d", lock, err, want)
		}
		_ = lock.Close()
	}
	replica.signal(t, syscall.SIGSTOP)
	if got := primary.must(t, "CLIENT", "KILL", "TYPE", "replica"); got != ":1" {
		t.Fatalf("CLIENT KILL TYPE replica on the primary = %s; want :1", got)
	}
	var last *Lock
	for want := int64(3); want <= 5; want++ { // tokens only the primary knows
		lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, 30*time.Second)
		if err != nil || lock.FencingToken() != want {
			t.Fatalf("Acquire with the replica lagging = %v, %v; want token %d", lock, err, want)
		}
		if last = lock; want < 5 {
			_ = lock.Close()
		}
	}
	resource := &fencedResource{}
	if err := resource.write(last.FencingToken()); err != nil {
		t.Fatal(err)
	}

	primary.signal(t, syscall.SIGKILL)
	replica.signal(t, syscall.SIGCONT)
	promote(t, cluster, primary, replica)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	out, err := last.Release(ctx) // the lease went down with the primary
	cancel()
	t.Logf("release of token %d's lease after the failover: %v, %v", last.FencingToken(), out, err)

	next := acquireAfterFailover(t, c)
	defer next.Close()
	t.Logf("token %d was handed out before the failover; after it the next token is %d", last.FencingToken(), next.FencingToken())
	if next.FencingToken() > last.FencingToken() {
		t.Fatalf("token after the failover = %d; want <= %d (rolled back)", next.FencingToken(), last.FencingToken())
	}
	if err := resource.write(next.FencingToken()); err == nil {
		t.Fatalf("the resource accepted token %d after %d", next.FencingToken(), last.FencingToken())
	}
	t.Logf("the resource that saw token %d refuses the new owner's token %d", last.FencingToken(), next.FencingToken())

	primary.restart(t)
	cluster.waitHealthy(t)
	if repl := primary.must(t, "INFO", "replication"); !strings.Contains(repl, "role:slave") {
		t.Fatalf("the restarted primary did not rejoin as a replica: %q", repl)
	}
}

// promote makes replica the primary of its shard with CLUSTER FAILOVER
// TAKEOVER (it may already have promoted itself) and waits until the five
// live nodes report cluster_state:ok.
func promote(t *testing.T, cluster realCluster, dead, replica realNode) {
	t.Helper()
	eventually(t, "TAKEOVER", 10*time.Second, func() error {
		repl, err := replica.do("INFO", "replication")
		if err == nil && strings.Contains(repl, "role:master") {
			return nil
		}
		reply, err := replica.do("CLUSTER", "FAILOVER", "TAKEOVER")
		return fmt.Errorf("CLUSTER FAILOVER TAKEOVER = %q, %v", reply, err)
	})
	var live []realNode
	for _, n := range cluster.nodes {
		if n != dead {
			live = append(live, n)
		}
	}
	eventually(t, "cluster_state:ok after the takeover", 30*time.Second, func() error {
		for _, n := range live {
			if info, err := n.do("CLUSTER", "INFO"); err != nil || !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("%s: %v %q", n.name, err, firstLine(info))
			}
		}
		return nil
	})
}

// acquireAfterFailover retries until the client has found the new primary.
func acquireAfterFailover(t *testing.T, c *Coordinator) *Lock {
	t.Helper()
	var lock *Lock
	eventually(t, "Acquire after the failover", 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		lock, err = c.Acquire(ctx, leaseKey, counterKey, 30*time.Second)
		if errors.Is(err, conn.ErrOutcomeUnknown) {
			t.Logf("an attempt's outcome is unknown (its token may be spent): %v", err)
		}
		return err
	})
	return lock
}

// restoreShard undoes what the rollback test did, also when it failed half
// way: the replica resumed, the killed primary restarted (it rejoins as a
// replica of the promoted node), the whole cluster healthy.
func restoreShard(t *testing.T, cluster realCluster, primary, replica realNode) {
	replica.signal(t, syscall.SIGCONT)
	if !primary.alive(t) {
		primary.restart(t)
	}
	cluster.waitHealthy(t)
}

// On the Sentinel-managed primary (standalone, one replica) the dedicated
// connection comes from the Sentinel client's current primary: the token is
// handed out while the replica acknowledges and refused while it is stopped.
func TestFencingCounter_WaitOnASentinelPrimaryRefusesATokenNotReplicated(t *testing.T) {
	list, base := os.Getenv("RESPIRE_REAL_SENTINEL70"), os.Getenv("RESPIRE_REAL_SENTINEL70_DIR")
	if list == "" || base == "" {
		t.Skip("RESPIRE_REAL_SENTINEL70[_DIR] not set: no real Sentinel deployment (the Makefile starts one)")
	}
	lockRealServer(t, list)
	password := os.Getenv("RESPIRE_REAL_SENTINEL70_PASSWORD")
	client := wire.New(wire.Options{Addrs: strings.Split(list, ","), MasterName: os.Getenv("RESPIRE_REAL_SENTINEL70_MASTER"),
		Password: password, SentinelPassword: password})
	t.Cleanup(client.CloseSentinel)
	c := newCoordinator(t, client, fmt.Sprintf("coordination-sentinel:%d:", time.Now().UnixNano()))
	primary, replica := sentinelRoles(t, base, password)

	lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, 30*time.Second, WithReplicas(1, time.Second))
	if err != nil || lock.FencingToken() != 1 {
		t.Fatalf("Acquire WithReplicas(1, 1s) = %v, %v; want token 1", lock, err)
	}
	_ = lock.Close()
	replica.signal(t, syscall.SIGSTOP)
	t.Cleanup(func() {
		replica.signal(t, syscall.SIGCONT)
		eventually(t, "the Sentinel replica online again", 30*time.Second, func() error {
			if repl, err := primary.do("INFO", "replication"); err != nil || !strings.Contains(repl, "state=online") {
				return fmt.Errorf("%v %q", err, repl)
			}
			return nil
		})
	})
	_, err = c.TryAcquire(ctxT(t), leaseKey, counterKey, 30*time.Second, WithReplicas(1, 500*time.Millisecond))
	var nr *NotReplicatedError
	if !errors.As(err, &nr) || nr.Acknowledged != 0 || !nr.Released {
		t.Fatalf("TryAcquire with the replica stopped = %v; want ErrNotReplicated, 0 acknowledged, released", err)
	}
	t.Log(err)
}

// sentinelRoles returns the data nodes of the Sentinel deployment by their
// current role (a failover may have swapped primary/ and replica/).
func sentinelRoles(t *testing.T, base, password string) (primary, replica realNode) {
	t.Helper()
	a, b := newRealNode(t, base, "primary", password), newRealNode(t, base, "replica", password)
	if repl := a.must(t, "INFO", "replication"); strings.Contains(repl, "role:master") {
		return a, b
	}
	return b, a
}
