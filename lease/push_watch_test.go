package lease

import (
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// TestPushWatchesFollowKeys_AWatchsReadThatExpiresTheKeyWakesTheWaiter: a
// key watch (package election's Observe) is told of its key's changes; a
// read of it that finds the key missing after having seen it — a read that
// expired the key itself, which the server tells nobody on that watcher
// (NOLOOP) — tells the hub, so that a waiter of the same Locks parked on
// the key (retry interval a minute) takes it at once rather than a minute
// later.
func TestPushWatchesFollowKeys_AWatchsReadThatExpiresTheKeyWakesTheWaiter(t *testing.T) {
	clock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
	srv := startSim(t, sim.Config{Profile: sim.Valkey90, Clock: clock, ExpireEvery: -1}) // lazy expiry only
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
	ctx := ctxT(t)
	const key = "watch:expiring"
	srv.Exec("SET", key, "someone-else", "PX", "1000")
	watch, ok := locks.driver().WatchKey(key)
	if !ok {
		t.Fatal("no push")
	}
	defer watch.Stop()
	if _, found, err := watch.Read(ctx); !found || err != nil {
		t.Fatalf("Read = %v, %v; want the key", found, err)
	}
	got := make(chan acquired, 1)
	go func() {
		lock, err := locks.Acquire(ctx, key, 30*time.Second, WithWaitUntilDone(), WithRetryEvery(time.Minute))
		got <- acquired{lock: lock, err: err, at: time.Now()}
	}()
	eventually(t, "the waiter parked", func() bool { return parkedWaiters(locks, key) == 1 })
	clock.Advance(1001 * time.Millisecond) // expired, and nobody told: no expiry loop
	if _, found, err := watch.Read(ctx); found || err != nil {
		t.Fatalf("Read = %v, %v; want the key expired by this read", found, err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter: %v; want the key at once", r.err)
	}
	defer r.lock.Close()
	select {
	case <-watch.Changed(): // the waiter's SET NX changed the key, which the read tracked again
	case <-ctx.Done():
		t.Fatal("the watch was not told of the new owner's SET")
	}
}
