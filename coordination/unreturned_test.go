package coordination

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// goodReplicas is the primary's count of replicas good enough for
// min-replicas-to-write (INFO replication's min_slaves_good_slaves).
func goodReplicas(t *testing.T, primary realNode) string {
	t.Helper()
	return infoField(primary.must(t, "INFO", "replication"), "min_slaves_good_slaves")
}

// pttl is the key's PTTL on node, in milliseconds (-2: no key).
func pttl(t *testing.T, node realNode, key string) int64 {
	t.Helper()
	reply := node.must(t, "PTTL", key)
	ms, err := strconv.ParseInt(strings.TrimPrefix(reply, ":"), 10, 64)
	if err != nil {
		t.Fatalf("PTTL %s = %q", key, reply)
	}
	return ms
}

// TestUnreturnedHandleEnds_NotReplicatedKeepAliveLeaseExpiresWithItsTTL:
// the configuration docs/deployment.md recommends (min-replicas-to-write 1)
// on a private primary and replica over real sockets. The replica stalls
// (SIGSTOP) and, while the acquisition's WAIT is blocked, the primary drops
// its link (as it does once the lag passes min-replicas-max-lag or
// repl-timeout): WAIT counts 0, and the release of the lease the script
// took is refused with NOREPLICAS. The handle the caller never received
// must end anyway: once the replica is back and writes are accepted again,
// nothing renews the lease (its PTTL never goes back up), it expires with
// its TTL, and a rival acquires. Before the fix, the dropped handle's
// keep-alive (WithKeepAlive) renewed the key for ever.
func TestUnreturnedHandleEnds_NotReplicatedKeepAliveLeaseExpiresWithItsTTL(t *testing.T) {
	primary, replica := startPrivateReplicated(t, "min-replicas-to-write 1", "min-replicas-max-lag 10")
	c := newCoordinator(t, lockClient(t, []string{primary.addr}, primary.password), "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lock, err := c.Acquire(ctx, leaseKey, counterKey, time.Minute, WithReplicas(1, 5*time.Second))
	if err != nil || lock.FencingToken() != 1 {
		t.Fatalf("Acquire WithReplicas(1, 5s) with the replica online = %v, %v; want token 1", lock, err)
	}
	if out, err := lock.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}

	replica.signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { _ = syscall.Kill(replica.pid(t), syscall.SIGCONT) })
	const ttl, waitTimeout = 6 * time.Second, 2 * time.Second
	start := time.Now()
	failed := make(chan error, 1)
	go func() {
		attempt, err := c.TryAcquire(ctx, leaseKey, counterKey, ttl, lease.WithKeepAlive(), WithReplicas(1, waitTimeout))
		if attempt.Acquired() {
			_ = attempt.Close()
			err = fmt.Errorf("acquired %v; want not replicated (error %v)", attempt.Lock(), err)
		}
		failed <- err
	}()
	eventually(t, "the acquisition's WAIT blocked on the primary", waitTimeout, func() error {
		if n := infoField(primary.must(t, "INFO", "clients"), "blocked_clients"); n != "1" {
			return fmt.Errorf("blocked_clients:%s", n)
		}
		return nil
	})
	if got := primary.must(t, "CLIENT", "KILL", "TYPE", "replica"); got != ":1" {
		t.Fatalf("CLIENT KILL TYPE replica = %s; want :1", got)
	}
	if got := goodReplicas(t, primary); got != "0" {
		t.Fatalf("min_slaves_good_slaves = %q after the replica's link dropped; want 0", got)
	}

	err = <-failed
	var nr *NotReplicatedError
	if !errors.As(err, &nr) || nr.Acknowledged != 0 || nr.Released {
		t.Fatalf("TryAcquire with the replica stalled = %v; want NotReplicatedError, 0 acknowledged, not released (NOREPLICAS)", err)
	}
	t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
	last := pttl(t, primary, leaseKey)
	if last <= 0 {
		t.Fatalf("PTTL %d right after the failure; want the lease still there (its release was refused)", last)
	}

	replica.signal(t, syscall.SIGCONT)
	eventually(t, "writes accepted again (the replica back)", 5*time.Second, func() error {
		if got := goodReplicas(t, primary); got != "1" {
			return fmt.Errorf("min_slaves_good_slaves:%s", got)
		}
		return nil
	})
	deadline := start.Add(ttl + 2*time.Second)
	for ; last != -2; time.Sleep(20 * time.Millisecond) { // watching the key, no assertion on timing
		now := pttl(t, primary, leaseKey)
		if now > last {
			t.Fatalf("the lease's PTTL went back up from %d to %d ms: something renewed the lease of a handle nobody received", last, now)
		}
		if last = now; time.Now().After(deadline) {
			t.Fatalf("the lease still lives %v after the acquisition (PTTL %d ms); want it expired with its %v TTL", time.Since(start), now, ttl)
		}
	}
	t.Logf("the lease expired %v after the acquisition began (TTL %v)", time.Since(start).Round(time.Millisecond), ttl)
	rival, err := c.Acquire(ctx, leaseKey, counterKey, time.Minute)
	if err != nil {
		t.Fatalf("a rival's Acquire after the expiry = %v", err)
	}
	t.Logf("a rival holds it with token %d", rival.FencingToken())
	_ = rival.Close()
}

// TestUnreturnedHandleEnds_RefusedReleaseOfANotReplicatedLockStopsItsKeepAlive
// is the same over the simulator (real sockets, a sim Redis 8.4): WAIT
// counts 0 and every delete is refused with NOREPLICAS. The lease must
// expire with its TTL with no renewal ever sent, while a keep-alive would
// have renewed it at half the TTL.
func TestUnreturnedHandleEnds_RefusedReleaseOfANotReplicatedLockStopsItsKeepAlive(t *testing.T) {
	srv, c := simCoordinator(t, sim.Redis84)
	srv.Inject(sim.Fault{Kind: sim.ReplaceReply, Command: "WAIT", Reply: ":0\r\n"})
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "DELEX", Times: 1000,
		Error: "NOREPLICAS Not enough good replicas to write."})
	const ttl = time.Second
	start := time.Now()
	_, err := c.TryAcquire(ctxT(t), leaseKey, counterKey, ttl, lease.WithKeepAlive(), WithReplicas(1, 10*time.Millisecond))
	var nr *NotReplicatedError
	if !errors.As(err, &nr) || nr.Acknowledged != 0 || nr.Released {
		t.Fatalf("TryAcquire = %v; want NotReplicatedError, 0 acknowledged, not released", err)
	}
	for srv.Exec("EXISTS", leaseKey) != ":0\r\n" { // the sim expires the key on its real clock
		if time.Since(start) > ttl+2*time.Second {
			t.Fatalf("the lease still exists %v after a %v acquisition", time.Since(start), ttl)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, e := range srv.Log() {
		if name := strings.ToUpper(e.Args[0]); name == "SET" || name == "PEXPIRE" {
			t.Fatalf("%q sent: a handle nobody received was renewed", e.Args)
		}
	}
}
