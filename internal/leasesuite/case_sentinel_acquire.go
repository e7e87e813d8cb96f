package leasesuite

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// TestSentinelAcquisitionsNeedReplicaAcks_AnAcquisitionNoReplicaAcknowledgedIsNotHandedOut:
// on a Sentinel client of the transport whose primary's replica is online,
// the replica then stopped (SIGSTOP: as a replica Sentinel promotes stops
// taking the old primary's writes), the primary still answers SET NX OK,
// but a promoted replica would lack the key and another client could take
// it there: two owners. So Acquire hands out no lock (an error matching
// conn.ErrNotReplicated and lease.ErrNotSubmitted: the key was deleted
// again, owner-compared), nor does a waiting Acquire within its wait, a
// semaphore's permit, or TryTake (false); the primary holds none of the
// keys afterwards. Before the rule each was handed out.
func caseSentinelAcquisitionsNeedReplicaAcks_AnAcquisitionNoReplicaAcknowledgedIsNotHandedOut(t *testing.T, tr Transport) {
	sentinels, master, password := realSentinel(t)
	prefix := fmt.Sprintf("acqacks:%d:", time.Now().UnixNano())
	locks := tr.Sentinel(t, sentinels, master, password).WithKeyPrefix(prefix)
	primary := primaryOf(t, newSentinelClient(t, sentinels, master, password))
	replica := otherDataNode(t, primary)
	awaitReplicaHealthy(t, sentinels, master, password, primary, replica) // the session's INFO lists it
	warm, err := locks.Acquire(ctxT(t), "warm", time.Minute, lease.WithWait(sentinelAcquireWait))
	if err != nil {
		t.Fatalf("Acquire with the replica online = %v", err)
	}
	_, _ = warm.Release(ctxT(t))
	freezeNode(t, replica, password, func() { awaitReplicaHealthy(t, sentinels, master, password, primary, replica) })
	notHandedOut := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, conn.ErrNotReplicated) || !errors.Is(err, lease.ErrNotSubmitted) {
			t.Errorf("%s with the replica stopped: %v; want an error matching conn.ErrNotReplicated and lease.ErrNotSubmitted", what, err)
		}
	}
	lock, err := locks.Acquire(ctxT(t), "k", time.Minute, lease.WithKeepAlive())
	if lock != nil {
		_ = lock.Close()
		t.Fatal("Acquire handed out a lock no replica acknowledged")
	}
	notHandedOut("Acquire", err)
	lock, err = locks.Acquire(ctxT(t), "waiting", time.Minute, lease.WithWait(500*time.Millisecond))
	if lock != nil {
		_ = lock.Close()
		t.Fatal("a waiting Acquire handed out a lock no replica acknowledged")
	}
	notHandedOut("a waiting Acquire", err)
	permit, err := locks.Semaphore("sem", 2).Acquire(ctxT(t), time.Minute)
	if permit != nil {
		_ = permit.Close()
		t.Fatal("Semaphore.Acquire handed out a permit no replica acknowledged")
	}
	notHandedOut("Semaphore.Acquire", err)
	taken, err := locks.TryTake(ctxT(t), "raw", lease.NewToken(), time.Minute)
	if taken {
		t.Fatal("TryTake took a key no replica acknowledged")
	}
	notHandedOut("TryTake", err)
	for _, key := range []string{"k", "waiting", "raw"} {
		if got := adminExec(primary, password, "EXISTS", prefix+key); got != ":0\r\n" {
			t.Errorf("the primary still holds %s (EXISTS = %q): not deleted again", key, got)
		}
	}
}

func init() {
	register(Case{"SentinelAcquisitionsNeedReplicaAcks_AnAcquisitionNoReplicaAcknowledgedIsNotHandedOut",
		caseSentinelAcquisitionsNeedReplicaAcks_AnAcquisitionNoReplicaAcknowledgedIsNotHandedOut})
}
