package leasesuite

import (
	"context"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"strconv"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/simtest"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

// Managed locks on a mixed-version cluster: each lock renews and releases on
// the session of the node its prefixed key lives on, with that node's
// commands, and closing leaves no armed timer behind.
func caseManagedLocksOnMixedVersionClusterRenewAndReleaseOnTheirNode(t *testing.T, tr Transport) {
	profiles := []sim.Profile{sim.Redis70, sim.Redis84, sim.Valkey81, sim.Valkey90}
	c := simtest.StartCluster(t, sim.ClusterConfig{Profiles: profiles, Password: simPassword})
	locks := newLocks(t, tr, clientOf(c.Addrs(), "", simPassword, false)).WithKeyPrefix("app:")
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	ctx := ctxT(t)
	held := make([]*lease.Lock, len(profiles))
	for i := range profiles {
		key := keyForNode(t, c, "app:", i)
		lock, err := locks.Acquire(ctx, key, 10*time.Second, lease.WithKeepAlive())
		if err != nil {
			t.Fatalf("node %d: Acquire = %v", i, err)
		}
		held[i] = lock
	}
	clock.Advance(5 * time.Second)
	for i, lock := range held {
		eventually(t, "renewal confirmed", func() bool { return renewedFresh(lock) })
		if seqOf(c.Node(i).Log(), isCommand("SET", "app:"+lock.Key())) == 0 {
			t.Fatalf("node %d saw no command for its lock", i)
		}
	}
	for i, lock := range held {
		if err := lock.Close(); err != nil {
			t.Fatalf("node %d: Close = %v", i, err)
		}
		if got := c.Node(i).Exec("EXISTS", "app:"+lock.Key()); got != ":0\r\n" {
			t.Fatalf("node %d: lock not released: %q", i, got)
		}
	}
	leaseinternal.Driver(locks).WaitIdle() // the push reads the releases started are bounded on the clock too
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers still armed after Close", n)
	}
}

// A slot moved under a held lock: the keep-alive's renewal is redirected
// (MOVED) to the new owner, keeps the lock, and later renewals go there
// directly.
func caseKeepAliveFollowsAMovedSlot(t *testing.T, tr Transport) {
	profiles := []sim.Profile{sim.Redis84, sim.Redis84}
	c := simtest.StartCluster(t, sim.ClusterConfig{Profiles: profiles, Password: simPassword})
	locks := newLocks(t, tr, clientOf(c.Addrs(), "", simPassword, false))
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	key := keyForNode(t, c, "", 0)
	lock, err := locks.Acquire(ctxT(t), key, 10*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	c.MoveSlot(sim.Slot(key), 1)
	clock.Advance(5 * time.Second)
	eventually(t, "redirected renewal confirmed", func() bool { return renewedFresh(lock) })
	c.Node(0).ResetLog()
	c.Node(1).ResetLog()
	clock.Advance(5 * time.Second)
	eventually(t, "second renewal confirmed", func() bool { return renewedFresh(lock) })
	if seqOf(c.Node(1).Log(), isRenewal(key)) == 0 || seqOf(c.Node(0).Log(), isRenewal(key)) != 0 {
		t.Fatalf("second renewal: node 0 %v, node 1 %v; want it on node 1 only", c.Node(0).Log(), c.Node(1).Log())
	}
	if err := lock.Context().Err(); err != nil {
		t.Fatalf("keep-alive ended: %v", context.Cause(lock.Context()))
	}
}

// An acquisition sent to a node that lost the slot is answered MOVED (it did
// not run there) and goes to the new owner's session, where the lock then
// renews and releases.
func caseAcquisitionFollowsAMovedSlot(t *testing.T, tr Transport) {
	c := simtest.StartCluster(t, sim.ClusterConfig{Profiles: []sim.Profile{sim.Redis84, sim.Redis84}, Password: simPassword})
	locks := newLocks(t, tr, clientOf(c.Addrs(), "", simPassword, false))
	key := keyForNode(t, c, "", 0)
	first, err := locks.Acquire(ctxT(t), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := first.Release(ctxT(t)); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
	c.MoveSlot(sim.Slot(key), 1)
	lock, err := locks.Acquire(ctxT(t), key, time.Minute)
	if err != nil {
		t.Fatalf("Acquire after the move = %v", err)
	}
	if got := c.Node(1).Exec("EXISTS", key); got != ":1\r\n" {
		t.Fatalf("the new owner does not hold the lock: %q", got)
	}
	if ok, err := lock.ResetExpiry(ctxT(t), time.Minute); !ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v", ok, err)
	}
	if out, err := lock.Release(ctxT(t)); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
}

// TestFenceBeforeReturn_TheFenceHitsTheSessionThatCarriedTheCommandAfterARedirect:
// a keep-alive renewal follows MOVED to the slot's new owner and hangs
// there past the lease deadline. The fence kills the new owner's session
// (on that node, with that session's CLIENT ID), not the one the renewal
// started on.
func caseFenceBeforeReturn_TheFenceHitsTheSessionThatCarriedTheCommandAfterARedirect(t *testing.T, tr Transport) {
	c := simtest.StartCluster(t, sim.ClusterConfig{Profiles: []sim.Profile{sim.Redis84, sim.Valkey90}, Password: simPassword})
	locks := newLocks(t, tr, clientOf(c.Addrs(), "", simPassword, false))
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	key := keyForNode(t, c, "", 0)
	lock, err := locks.Acquire(ctxT(t), key, 10*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	defer close(gate)
	c.MoveSlot(sim.Slot(key), 1)
	c.Node(1).Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Match: hasIFEQ, Gate: gate})
	clock.Advance(5 * time.Second)
	renewal, err := c.Node(1).WaitFor(ctxT(t), isRenewal(key))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second) // past the deadline: the renewal on node 1 is cut off
	waitDone(t, lock.Context())
	kill, err := c.Node(1).WaitFor(ctxT(t), isKill)
	if err != nil {
		t.Fatal(err)
	}
	if kill.Args[3] != strconv.FormatInt(renewal.ClientID, 10) {
		t.Fatalf("fence %v on node 1; want CLIENT KILL ID %d (the session that carried the renewal)", kill.Args, renewal.ClientID)
	}
	if seqOf(c.Node(0).Log(), isKill) != 0 {
		t.Fatalf("a fence went to node 0, where the renewal started: %v", c.Node(0).Log())
	}
}

func init() {
	register(
		Case{"ManagedLocksOnMixedVersionClusterRenewAndReleaseOnTheirNode", caseManagedLocksOnMixedVersionClusterRenewAndReleaseOnTheirNode},
		Case{"KeepAliveFollowsAMovedSlot", caseKeepAliveFollowsAMovedSlot},
		Case{"AcquisitionFollowsAMovedSlot", caseAcquisitionFollowsAMovedSlot},
		Case{"FenceBeforeReturn_TheFenceHitsTheSessionThatCarriedTheCommandAfterARedirect", caseFenceBeforeReturn_TheFenceHitsTheSessionThatCarriedTheCommandAfterARedirect},
	)
}
