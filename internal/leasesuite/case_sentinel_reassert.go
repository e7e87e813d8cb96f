package leasesuite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/acldoc"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
)

// reassertLease is the lease of the re-assert case's locks: far longer
// than the switch takes, so that a lock still held when its key is gone is
// told by the switch, not by its lease's end.
const reassertLease = 30 * time.Second

// TestSwitchReassertsLocksWithoutKeepAlive_AKeyTheNewPrimaryLacksEndsTheLockAtOnce:
// two locks without keep-alive on a Sentinel client (30 s lease). The
// replica loses one lock's key (as if its acquisition had not been
// replicated yet: made writable for one DEL), then SENTINEL FAILOVER
// promotes it. When the client names the new primary, each lock is
// re-asserted there by an owner-compared reset to the time it has left,
// which never creates a key: the lock whose key is missing ends at once
// (within 10 s, not at its lease end), and the other is kept, its key
// still its own on the new primary, while an outsider tries SET NX on it
// every 100 ms and never wins it while the lock is live. The test reads
// the kept lock every 100 ms until the client names the new primary (the
// go-redis adapter learns of a switch from a round trip).
func caseSwitchReassertsLocksWithoutKeepAlive_AKeyTheNewPrimaryLacksEndsTheLockAtOnce(t *testing.T, tr Transport) {
	sentinels, master, password := realSentinel(t)
	locks := tr.Sentinel(t, sentinels, master, password).WithKeyPrefix(fmt.Sprintf("reassert:%d:", time.Now().UnixNano()))
	reassertTwoLocks(t, tr, locks, sentinels, master, password)
}

// TestSwitchReassertsLocksWithoutKeepAlive_AUserWithoutClientKillStillEndsALockTheNewPrimaryLacks:
// the same two locks, taken by a user with the documented Sentinel line
// less +client|kill (set on both data nodes): a lock without keep-alive
// needs no fence permission to be acquired, but its reset of the expiry
// does (ResetExpiry checks it first, and sends nothing without it). The
// re-assertion that cannot be sent reads the key instead (an
// owner-compared read needs no fence): the lock whose key the new primary
// lacks still ends at once, the other is kept.
func caseSwitchReassertsLocksWithoutKeepAlive_AUserWithoutClientKillStillEndsALockTheNewPrimaryLacks(t *testing.T, tr Transport) {
	page, err := acldoc.Read("../docs/compatibility.md", "../README.md")
	if err != nil {
		t.Fatal(err)
	}
	line, _ := sentinelLine(t, page)
	if !slices.Contains(line, "client|kill") {
		t.Fatalf("the Sentinel line %q has no +client|kill", acldoc.Line(line))
	}
	line = slices.DeleteFunc(slices.Clone(line), func(c string) bool { return c == "client|kill" })
	sentinels, master, password := realSentinel(t)
	old := primaryOf(t, newSentinelClient(t, sentinels, master, password))
	awaitReplicaHealthy(t, sentinels, master, password, old, otherDataNode(t, old))
	user := fmt.Sprintf("nokill-%d", time.Now().UnixNano())
	args := []string{"ACL", "SETUSER", user, "reset", "on", ">lockerpw", "~*"}
	for _, c := range line {
		args = append(args, "+"+c)
	}
	for _, node := range []string{old, otherDataNode(t, old)} { // every node Sentinel may promote
		if got := adminExec(node, password, args...); got != "+OK\r\n" {
			t.Fatalf("ACL SETUSER on %s = %q", node, got)
		}
		t.Cleanup(func() { adminExec(node, password, "ACL", "DELUSER", user) })
	}
	locks, err := tr.SentinelAs(t, sentinels, master, user, "lockerpw", password)
	if err != nil {
		t.Fatalf("a Sentinel client as a user without +client|kill = %v", err)
	}
	t.Cleanup(locks.Close)
	reassertTwoLocks(t, tr, locks.WithKeyPrefix(fmt.Sprintf("reassert:nokill:%d:", time.Now().UnixNano())), sentinels, master, password)
}

// reassertTwoLocks runs the re-assert case on locks: see
// TestSwitchReassertsLocksWithoutKeepAlive_AKeyTheNewPrimaryLacksEndsTheLockAtOnce.
func reassertTwoLocks(t *testing.T, tr Transport, locks *lease.Locks, sentinels []string, master, password string) {
	engine, _ := leaseinternal.Driver(locks).Transport().(*conn.Engine)
	old := primaryOf(t, newSentinelClient(t, sentinels, master, password))
	replica := otherDataNode(t, old)
	kept, err := locks.Acquire(ctxT(t), "kept", reassertLease, lease.WithWait(sentinelAcquireWait))
	if err != nil {
		t.Fatalf("Acquire on a Sentinel client = %v", err)
	}
	gone, err := locks.Acquire(ctxT(t), "gone", reassertLease, lease.WithWait(sentinelAcquireWait))
	if err != nil {
		t.Fatalf("Acquire on a Sentinel client = %v", err)
	}
	defer func() { _ = kept.Close(); _ = gone.Close() }()
	waitReplicated(t, old, password, wireKeys([]*lease.Lock{kept, gone}))
	adminExec(replica, password, "CONFIG", "SET", "replica-read-only", "no")
	deleted := adminExec(replica, password, "DEL", coreOf(gone).WireKey())
	adminExec(replica, password, "CONFIG", "SET", "replica-read-only", "yes")
	if deleted != ":1\r\n" {
		t.Fatalf("DEL of the lost key on the replica %s = %q", replica, deleted)
	}
	o := &ownership{ended: map[*lease.Lock]time.Time{}}
	o.watch(kept)
	stop, done := startContending(t, o, newSentinelClient(t, sentinels, master, password), wireKeys([]*lease.Lock{kept}))
	t.Cleanup(func() { awaitReconfigured(old, password) }) // a failed run leaves no failover in progress to the next
	if got := adminExec(sentinels[0], password, "SENTINEL", "FAILOVER", master); got != "+OK\r\n" {
		t.Fatalf("SENTINEL FAILOVER = %q", got)
	}
	// go-redis' adapter learns of a switch from the next round trip after
	// go-redis followed it (go-redis closes its Conns to the old primary):
	// a read every 100 ms is the application's lock traffic.
	lastRead := time.Time{}
	awaitSwitch(t, "the client named the new primary", sentinels, master, password, old, func() bool {
		if time.Since(lastRead) >= 100*time.Millisecond {
			lastRead = time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = kept.VerifyStillHeld(ctx)
			cancel()
		}
		return engine.IsPrimary(replica)
	})
	learned := time.Now()
	eventually(t, "the lock whose key the new primary lacks ended", func() bool { return gone.Context().Err() != nil })
	t.Logf("%s: the lock whose key the new primary lacks ended %v after the client named it (%v)", tr.Name,
		time.Since(learned).Round(time.Millisecond), context.Cause(gone.Context()))
	time.Sleep(time.Second) // the outsider's tries on the kept lock's key
	stop()
	<-done
	if n, _ := o.check(t, []*lease.Lock{kept}); n != 1 {
		t.Errorf("the lock whose key the new primary holds was lost: %v", context.Cause(kept.Context()))
	}
	if got := adminExec(replica, password, "GET", coreOf(kept).WireKey()); !strings.Contains(got, wireOf(kept.Token())) {
		t.Errorf("the kept lock's key on the new primary %s = %q; want its token", replica, got)
	}
	awaitFailover(t, "the old primary reconfigured as a replica", func() bool {
		return strings.Contains(adminExec(old, password, "INFO", "replication"), "role:slave")
	})
}

// otherDataNode returns the data node of the real Sentinel setup that is
// not primary.
func otherDataNode(t *testing.T, primary string) string {
	t.Helper()
	dir := os.Getenv("RESPIRE_REAL_SENTINEL70_DIR")
	for _, node := range []string{"primary", "replica"} {
		port, _ := os.ReadFile(filepath.Join(dir, node, "port"))
		if addr := "127.0.0.1:" + strings.TrimSpace(string(port)); addr != primary {
			return addr
		}
	}
	t.Fatalf("no data node other than %s in %s", primary, dir)
	return ""
}

func init() {
	register(Case{"SwitchReassertsLocksWithoutKeepAlive_AKeyTheNewPrimaryLacksEndsTheLockAtOnce",
		caseSwitchReassertsLocksWithoutKeepAlive_AKeyTheNewPrimaryLacksEndsTheLockAtOnce})
	register(Case{"SwitchReassertsLocksWithoutKeepAlive_AUserWithoutClientKillStillEndsALockTheNewPrimaryLacks",
		caseSwitchReassertsLocksWithoutKeepAlive_AUserWithoutClientKillStillEndsALockTheNewPrimaryLacks})
}
