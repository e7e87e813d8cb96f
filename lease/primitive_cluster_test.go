package lease

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/internal/simtest"
	"github.com/respire-go/respire/sim"
)

// Goal: on a cluster, semaphores and read/write locks spread over every
// master work as on one node: each one's keys share a slot (no CROSSSLOT),
// its holders renew with keep-alive on their node's session and release
// there, leaving nothing (the real 3+3 cluster and a four-node sim cluster
// of every profile).
func TestPrimitiveKeysShareASlot_HandlesOnAClusterRenewAndReleaseOnTheirNode(t *testing.T) {
	run := func(t *testing.T, locks *Locks, clock *actor.ManualClock, exists func(key string) bool) {
		ctx := ctxT(t)
		var held []*Lock
		for i := range 12 { // 12 names land on every master with overwhelming likelihood
			name := fmt.Sprintf("p%d", i)
			permit, err := locks.Semaphore(name, 2).Acquire(ctx, 10*time.Second, WithKeepAlive())
			if err != nil {
				t.Fatalf("%s: Semaphore.Acquire = %v", name, err)
			}
			reader, err := locks.RWLock(name).RLock(ctx, 10*time.Second, WithKeepAlive())
			if err != nil {
				t.Fatalf("%s: RLock = %v", name, err)
			}
			if att, err := locks.RWLock(name).TryLock(ctx, 10*time.Second); err != nil || att.Acquired() {
				t.Fatalf("%s: TryLock with a reader = %v, %v; want refused", name, att.Acquired(), err)
			}
			writer, err := locks.RWLock(name+"-w").Lock(ctx, 10*time.Second, WithKeepAlive())
			if err != nil {
				t.Fatalf("%s: Lock = %v", name, err)
			}
			held = append(held, permit, reader, writer)
		}
		if clock != nil {
			clock.Advance(5 * time.Second)
		} else {
			time.Sleep(6 * time.Second) // real time: past half the lease, every keep-alive renewed
		}
		for _, l := range held {
			eventually(t, "renewal confirmed", func() bool { return renewedFresh(l) })
			if err := l.Close(); err != nil {
				t.Fatalf("%s: Close = %v", l.Key(), err)
			}
		}
		eventually(t, "every key gone", func() bool {
			for _, l := range held {
				if exists(locks.KeyPrefix() + l.Key()) {
					return false
				}
			}
			return true
		})
	}
	t.Run("sim", func(t *testing.T) {
		c := simtest.StartCluster(t, sim.ClusterConfig{Profiles: sim.Profiles, Password: simPassword})
		locks := newLocks(t, newClient(t, c.Addrs(), "", simPassword, false)).WithKeyPrefix("app:")
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		run(t, locks, clock, func(key string) bool {
			for i := range sim.Profiles {
				if c.Node(i).Exec("EXISTS", key) == ":1\r\n" {
					return true
				}
			}
			return false
		})
	})
	t.Run("real-cluster-7.0", func(t *testing.T) {
		addrs, password := realCluster70(t)
		realserver.Lock(t, strings.Join(addrs, ","))
		locks := newLocks(t, newClient(t, addrs, "", password, true)).WithKeyPrefix(fmt.Sprintf("prim:%d:", time.Now().UnixNano()))
		observer := newOutsider(t, addrs, "", password)
		run(t, locks, nil, func(key string) bool {
			n, err := observer.Do(ctxT(t), observer.B().Exists().Key(key).Build()).AsInt64()
			return err != nil || n != 0
		})
	})
}
