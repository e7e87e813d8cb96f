package leasesuite

import (
	"context"
	"errors"
	"fmt"
	"github.com/respire-go/respire/lease"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/internal/simtest"
	"github.com/respire-go/respire/sim"
)

// TestPushFollowsTheSlot_ClusterWatchersPerNode: in a cluster the key is
// tracked on the watcher of its slot's primary; after the slot moves, the
// holder's redirected renewal makes everything be read again, now on the
// new owner, so a DEL there still ends the holder at once, and a waiter
// (retry interval a minute) is woken by the release on the new owner.
func casePushFollowsTheSlot_ClusterWatchersPerNode(t *testing.T, tr Transport) {
	c := simtest.StartCluster(t, sim.ClusterConfig{Profiles: []sim.Profile{sim.Valkey90, sim.Redis70}, Password: simPassword})
	ctx := ctxT(t)
	holderLocks := newLocks(t, tr, clientOf(c.Addrs(), "", simPassword, false))
	waiterLocks := newLocks(t, tr, clientOf(c.Addrs(), "", simPassword, false))
	key := keyForNode(t, c, "", 0)
	holder, err := holderLocks.Acquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan acquired, 1)
	go func() {
		lock, err := waiterLocks.Acquire(ctx, key, 400*time.Millisecond, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute),
			lease.WithKeepAlive())
		got <- acquired{lock: lock, err: err}
	}()
	eventually(t, "the waiter parked", func() bool { return parkedWaiters(waiterLocks, key) == 1 })
	if n := countMatching(c.Node(0).Log(), isCommand("CLIENT", "CACHING", "YES")); n == 0 {
		t.Fatal("the key was not tracked on its node")
	}
	c.MoveSlot(sim.Slot(key), 1)
	if _, err := holder.Release(ctx); err != nil { // MOVED, then released on node 1
		t.Fatal(err)
	}
	var lock *lease.Lock
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatal(r.err)
		}
		lock = r.lock
	case <-ctx.Done():
		t.Fatal("the waiter was not woken after the slot moved")
	}
	defer lock.Close()
	eventually(t, "the new holder's key tracked on node 1", func() bool {
		return holderArmed(waiterLocks, key) && countMatching(c.Node(1).Log(), isCommand("CLIENT", "CACHING", "YES")) > 0
	})
	c.Node(1).Exec("DEL", key)
	waitDone(t, lock.Context())
	var loss *lease.LossError
	if !errors.As(context.Cause(lock.Context()), &loss) || loss.Reason != lease.LossReadRefused {
		t.Fatalf("cause %v; want LossReadRefused", context.Cause(lock.Context()))
	}
}

// TestPushFollowsTheSlot_RealClusterWatchersPerNode: on the real 7.0
// cluster, holders of keys on every master learn at once of a third
// party's DEL (sent through another client, which routes it to the owner),
// and waiters (retry interval a minute) are woken by the releases.
func casePushFollowsTheSlot_RealClusterWatchersPerNode(t *testing.T, tr Transport) {
	addrs, password := realCluster70(t)
	realserver.Lock(t, strings.Join(addrs, ","))
	prefix := fmt.Sprintf("pushcluster:%d:", time.Now().UnixNano())
	holders := newLocks(t, tr, clientOf(addrs, "", password, true)).WithKeyPrefix(prefix)
	waiters := newLocks(t, tr, clientOf(addrs, "", password, true)).WithKeyPrefix(prefix)
	outsider := newClient(t, addrs, "", password)
	ctx := ctxT(t)
	for i := range 12 { // keys on every master of 3 with overwhelming likelihood
		key := fmt.Sprintf("job-%d", i)
		lock, err := holders.Acquire(ctx, key, 30*time.Second, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "tracked", func() bool { return holderArmed(holders, prefix+key) })
		if err := outsider.Do(ctx, outsider.B().Del().Key(prefix+key).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		waitDone(t, lock.Context())
		var loss *lease.LossError
		if !errors.As(context.Cause(lock.Context()), &loss) || loss.Reason != lease.LossReadRefused {
			t.Fatalf("%s: cause %v; want LossReadRefused", key, context.Cause(lock.Context()))
		}
		holder, err := holders.Acquire(ctx, key, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan acquired, 1)
		go func() {
			lock, err := waiters.Acquire(ctx, key, 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
			got <- acquired{lock: lock, err: err}
		}()
		eventually(t, "parked", func() bool { return parkedWaiters(waiters, prefix+key) == 1 })
		if _, err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatalf("%s: waiter: %v", key, r.err)
		}
		if _, err := r.lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func init() {
	register(
		Case{"PushFollowsTheSlot_ClusterWatchersPerNode", casePushFollowsTheSlot_ClusterWatchersPerNode},
		Case{"PushFollowsTheSlot_RealClusterWatchersPerNode", casePushFollowsTheSlot_RealClusterWatchersPerNode},
	)
}
