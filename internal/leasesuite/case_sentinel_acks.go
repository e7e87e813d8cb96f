package leasesuite

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/lease"
)

// acksLease is the lease of the replica-acknowledgement case: the issue's
// 3 s, renewed every 1.5 s.
const acksLease = 3 * time.Second

// TestSentinelRenewalsNeedReplicaAcks_ARenewalNoReplicaAcknowledgedExtendsNothing:
// a keep-alive lock (3 s lease) on a Sentinel client, its key replicated;
// then the replica stops (SIGSTOP), as a replica Sentinel promotes stops
// taking the old primary's writes. The primary keeps answering the
// renewals OK, and they run there (its key keeps the lock's token), but no
// replica acknowledges them: a failover at that moment would promote a
// node that never saw them. So none is a confirmation, and the lock's
// estimate counts from the last renewal sent before the replica stopped:
// one lease after the stop, the lock's Context().Err() (exact, rule
// LeaseContextErrIsExact) says lost while the primary's key still holds its
// token. Before the rule the renewals answered OK kept it live.
func caseSentinelRenewalsNeedReplicaAcks_ARenewalNoReplicaAcknowledgedExtendsNothing(t *testing.T, tr Transport) {
	sentinels, master, password := realSentinel(t)
	locks := tr.Sentinel(t, sentinels, master, password).WithKeyPrefix(fmt.Sprintf("acks:%d:", time.Now().UnixNano()))
	primary := primaryOf(t, newSentinelClient(t, sentinels, master, password))
	replica := otherDataNode(t, primary)
	awaitReplicaHealthy(t, sentinels, master, password, primary, replica) // the session's ROLE lists it: renewals wait for it
	lock, err := locks.Acquire(ctxT(t), "acks", acksLease, lease.WithKeepAlive(), lease.WithWait(sentinelAcquireWait))
	if err != nil {
		t.Fatalf("Acquire on a Sentinel client = %v", err)
	}
	defer func() { _ = lock.Close() }()
	key := coreOf(lock).WireKey()
	waitReplicated(t, primary, password, []string{key})
	stopped := freezeNode(t, replica, password, func() { // the next failover case may promote it
		awaitReplicaHealthy(t, sentinels, master, password, primary, replica)
	})
	time.Sleep(time.Until(stopped.Add(acksLease))) // a lease after the stop: every renewal since went unacknowledged
	if err := lock.Context().Err(); err == nil {
		t.Fatalf("%s: the lock is live a lease (%v) after its replica stopped: a renewal no replica acknowledged extended it",
			tr.Name, acksLease)
	}
	if got := adminExec(primary, password, "GET", key); !strings.Contains(got, wireOf(lock.Token())) {
		t.Fatalf("the primary %s no longer holds the lock's key (GET = %q): the renewals did not run there", primary, got)
	}
	pttl, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(adminExec(primary, password, "PTTL", key), ":")))
	t.Logf("%s: a lease after the replica stopped the lock is lost (%v) while the primary's key, renewed there, lives %d ms more",
		tr.Name, lock.Context().Err(), pttl)
}

// freezeNode stops the data node at addr (SIGSTOP) until the test ends,
// when it resumes it and runs resumed. It returns the time of the stop.
func freezeNode(t *testing.T, addr, password string, resumed func()) time.Time {
	t.Helper()
	info := adminExec(addr, password, "INFO", "server")
	pid := 0
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid == 0 {
		t.Fatalf("no process_id in %s's INFO server", addr)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		resumed()
	})
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %s: %v", addr, err)
	}
	return time.Now()
}

// awaitReplicaHealthy waits (30 s at most) until primary lists replica
// online, the replica's link is up and no sentinel holds it down: a
// replica Sentinel may promote, as the next failover case needs.
func awaitReplicaHealthy(t *testing.T, sentinels []string, master, password, primary, replica string) {
	t.Helper()
	healthy := func() bool {
		if !strings.Contains(adminExec(primary, password, "INFO", "replication"), "state=online") ||
			!strings.Contains(adminExec(replica, password, "INFO", "replication"), "master_link_status:up") {
			return false
		}
		for _, s := range sentinels {
			if got := sentinelReplicas(s, password, master); !strings.Contains(got, "flags slave ") ||
				strings.Contains(got, "s_down") || strings.Contains(got, "disconnected") {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(30 * time.Second); !healthy(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the replica %s is not healthy 30 s on: %s; sentinel: %s", replica, replicationLine(primary, password),
				sentinelReplicas(sentinels[0], password, master))
			return
		}
	}
}

// sentinelReplicas returns SENTINEL REPLICAS master as the sentinel at
// addr answers it, its strings joined by spaces ("" when unreachable).
func sentinelReplicas(addr, password, master string) string {
	c, err := realserver.Dial(addr, password)
	if err != nil {
		return ""
	}
	defer c.Close()
	if c.Send("SENTINEL", "REPLICAS", master) != nil {
		return ""
	}
	var out []string
	var read func() bool
	read = func() bool { // one RESP2 value: arrays of bulks and scalars
		line, err := c.Reader.ReadString('\n')
		if err != nil || len(line) < 3 {
			return false
		}
		line = strings.TrimSuffix(line, "\r\n")
		n, _ := strconv.Atoi(line[1:])
		switch line[0] {
		case '*':
			for range n {
				if !read() {
					return false
				}
			}
		case '$':
			body := make([]byte, max(n, 0)+2)
			if n >= 0 {
				if _, err := io.ReadFull(c.Reader, body); err != nil {
					return false
				}
				out = append(out, string(body[:n]))
			}
		default:
			out = append(out, line[1:])
		}
		return true
	}
	read()
	return strings.Join(out, " ") + " "
}

func init() {
	register(Case{"SentinelRenewalsNeedReplicaAcks_ARenewalNoReplicaAcknowledgedExtendsNothing",
		caseSentinelRenewalsNeedReplicaAcks_ARenewalNoReplicaAcknowledgedExtendsNothing})
}
