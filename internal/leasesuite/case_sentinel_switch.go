package leasesuite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
)

// switchLocks is how many keep-alive locks the switch case holds, taken
// switchStagger apart so that their renewals (every failoverLease/2) fall
// all over the seconds Sentinel takes to name the new primary: some of
// them are answered by the old primary after the replica was promoted.
const switchLocks = 10

var switchStagger = failoverLease / 2 / switchLocks

// TestPrimarySwitchRenewsAtOnce_EveryLockIsConfirmedOnTheNewPrimary: 10
// keep-alive locks on a Sentinel client, then SENTINEL FAILOVER while an
// outsider tries SET NX on the new primary every 100 ms. The old primary
// answers renewals for about a second after the replica was promoted;
// those renewals never reach the new primary, and no replica acknowledges
// them, so none is a confirmation (rule SentinelRenewalsNeedReplicaAcks).
// Once the client names the new primary, every lock is renewed there at
// once and its estimate counts from that renewal. At no time from the
// failover command on is a live lock's ExpiresAtEstimate later than its
// key's expiry on the replica Sentinel promotes (PTTL, read there), no
// outsider wins a key whose lock is live, no session to the new primary
// is retired as demoted, and at least 9 of the 10 locks are kept.
func casePrimarySwitchRenewsAtOnce_EveryLockIsConfirmedOnTheNewPrimary(t *testing.T, tr Transport) {
	sentinels, master, password := realSentinel(t)
	if prev := primaryOf(t, newSentinelClient(t, sentinels, master, password)); prev != "" {
		// A failover just before may leave the replica resyncing: the Locks
		// must meet it online (rule SentinelRenewalsNeedReplicaAcks counts
		// the replicas a primary has had online).
		awaitReplicaHealthy(t, sentinels, master, password, prev, otherDataNode(t, prev))
	}
	tel := newTelemetry(t)
	locks := tr.Sentinel(t, sentinels, master, password, tel.options()...).WithKeyPrefix(fmt.Sprintf("switch:%d:", time.Now().UnixNano()))
	engine, _ := leaseinternal.Driver(locks).Transport().(*conn.Engine)
	watcher := newSentinelClient(t, sentinels, master, password)
	old := primaryOf(t, watcher)
	replica := otherDataNode(t, old)
	o := &ownership{ended: map[*lease.Lock]time.Time{}}
	var held []*lease.Lock
	for i := range switchLocks {
		lock, err := locks.Acquire(ctxT(t), fmt.Sprintf("job-%d", i), failoverLease, lease.WithKeepAlive(), lease.WithWait(sentinelAcquireWait))
		if err != nil {
			t.Fatalf("Acquire on a Sentinel client = %v", err)
		}
		o.watch(lock)
		held = append(held, lock)
		time.Sleep(switchStagger)
	}
	waitReplicated(t, old, password, wireKeys(held))
	stop, done := startContending(t, o, newSentinelClient(t, sentinels, master, password), wireKeys(held))
	failover := time.Now()
	t.Cleanup(func() { awaitReconfigured(old, password) }) // a failed run leaves no failover in progress to the next
	if got := adminExec(sentinels[0], password, "SENTINEL", "FAILOVER", master); got != "+OK\r\n" {
		t.Fatalf("SENTINEL FAILOVER = %q", got)
	}
	late := 0
	resent := awaitSwitch(t, "the client named the new primary", sentinels, master, password, old, func() bool {
		late += checkEstimates(t, held, replica, password) // before the switch is known too
		return !engine.IsPrimary(old)
	})
	learned := time.Now()
	t.Logf("the %s client named the new primary %v after SENTINEL FAILOVER", tr.Name, learned.Sub(failover).Round(time.Millisecond))
	awaitFailover(t, "a sentinel named the new primary", func() bool { return sentinelsPrimary(sentinels, master, password, old) != "" })
	fresh := sentinelsPrimary(sentinels, master, password, old)
	if fresh != replica {
		t.Fatalf("Sentinel promoted %s; want the replica %s", fresh, replica)
	}
	for time.Since(learned) < 2*failoverLease {
		late += checkEstimates(t, held, fresh, password)
		time.Sleep(50 * time.Millisecond)
	}
	causes := lossCauses(held)
	kept, lost := settle(t, o, held, stop, done)
	t.Logf("Sentinel failover %s -> %s on %s: %d of %d locks kept, %d lost%s, %d estimates past the new primary's expiry",
		old, fresh, tr.Name, kept, switchLocks, lost, causes, late)
	host, port, _ := strings.Cut(fresh, ":")
	portNumber, _ := strconv.Atoi(port)
	if n := tel.sum(t, "respire.sessions.retired", str(attrResult, "demoted"), str(attrServerAddr, host),
		attribute.Int(attrServerPort, portNumber)); n != 0 {
		t.Errorf("%d sessions to the new primary %s were retired as demoted; want none", n, fresh)
	}
	switch {
	case kept < switchLocks-1 && resent > 0:
		// Sentinel did not carry out the first failover (loaded host): the
		// switch took longer than the lease, and the replica it had begun to
		// promote acknowledged nothing meanwhile, so the rule ends the locks
		// (their safety is checked above all the same). How many are kept is
		// a claim about a failover done in one go.
		t.Logf("SENTINEL FAILOVER was sent %d more times: %d of %d locks kept is not judged", resent, kept, switchLocks)
	case kept < switchLocks-1:
		t.Errorf("%d of %d locks kept through the failover; want at least %d", kept, switchLocks, switchLocks-1)
	}
	awaitFailover(t, "the old primary reconfigured as a replica", func() bool {
		return strings.Contains(adminExec(old, password, "INFO", "replication"), "role:slave")
	})
}

// lossCauses returns, for the test's log, how many of held ended with
// each cause ("" when none ended).
func lossCauses(held []*lease.Lock) string {
	counts := map[string]int{}
	for _, lock := range held {
		if lock.Context().Err() != nil {
			counts[context.Cause(lock.Context()).Error()]++
		}
	}
	out := ""
	for cause, n := range counts {
		out += fmt.Sprintf(" [%d: %s]", n, cause)
	}
	return out
}

// checkEstimates reports (t.Errorf) every live lock whose ExpiresAtEstimate
// is later than its key's expiry on primary could be (the PTTL read there,
// counted from when its reply came back): an outsider could take the key
// there while the lock says it is held. It returns how many there were
// (only the first of a round is printed).
func checkEstimates(t *testing.T, held []*lease.Lock, primary, password string) int {
	t.Helper()
	late := 0
	for _, lock := range held {
		if lock.Context().Err() != nil {
			continue
		}
		estimate := lock.ExpiresAtEstimate()
		reply := adminExec(primary, password, "PTTL", coreOf(lock).WireKey())
		answered := time.Now()
		pttl, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(reply, ":")))
		if err != nil || lock.Context().Err() != nil {
			continue
		}
		if expiry := answered.Add(time.Duration(pttl) * time.Millisecond); pttl < 0 || estimate.After(expiry) {
			if late++; late == 1 {
				t.Errorf("a live lock's estimate %s is past its key's expiry on the new primary (PTTL %d ms at %s)",
					estimate.Format("15:04:05.000"), pttl, answered.Format("15:04:05.000"))
			}
		}
	}
	return late
}

// waitReplicated waits (20 s at most) until the replica of primary holds
// every key: a replica Sentinel reconfigured a moment ago resyncs in full
// after a delay of seconds, and a failover before that loses whatever it
// has not received — the acquisitions themselves, which only WithReplicas
// (WAIT) protects, not what this case is about.
func waitReplicated(t *testing.T, primary, password string, keys []string) {
	t.Helper()
	dir := os.Getenv("RESPIRE_REAL_SENTINEL70_DIR")
	replica := ""
	for _, node := range []string{"primary", "replica"} {
		port, _ := os.ReadFile(filepath.Join(dir, node, "port"))
		if addr := "127.0.0.1:" + strings.TrimSpace(string(port)); addr != primary {
			replica = addr
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, key := range keys {
		for adminExec(replica, password, "EXISTS", key) != ":1\r\n" {
			if time.Now().After(deadline) {
				t.Fatalf("the replica %s does not have %s after 20 s: %s", replica, key, replicationLine(primary, password))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func init() {
	register(Case{"PrimarySwitchRenewsAtOnce_EveryLockIsConfirmedOnTheNewPrimary",
		casePrimarySwitchRenewsAtOnce_EveryLockIsConfirmedOnTheNewPrimary})
}
