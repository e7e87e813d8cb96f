package leasetest_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// keyFaults are the faults that change one key, by name.
var keyFaults = []struct {
	name  string
	apply func(*leasetest.Server, string) bool
	gone  bool // the key no longer exists afterwards
}{
	{"Steal", (*leasetest.Server).Steal, false},
	{"Delete", (*leasetest.Server).Delete, true},
	{"Expire", (*leasetest.Server).Expire, true},
}

// TestKitFaultsAreObserved_PushHolderLosesAtOnce: a keep-alive holder with
// push whose key is stolen, deleted or expired sees Lock.Context end with
// LossReadRefused, long before its first renewal (half of a 30 s lease),
// and the server holds what the fault promised. Keys are wire keys: the
// view's prefix is part of them.
func TestKitFaultsAreObserved_PushHolderLosesAtOnce(t *testing.T) {
	forEachProfile(t, func(t *testing.T, srv *leasetest.Server) {
		locks := srv.Locks().WithKeyPrefix("jobs:")
		for _, fault := range keyFaults {
			t.Run(fault.name, func(t *testing.T) {
				ctx := boundedCtx(t)
				lock := acquire(t, ctx, locks, "report:"+fault.name, 30*time.Second)
				key := locks.KeyPrefix() + lock.Key()
				faulted := time.Now()
				if !fault.apply(srv, key) {
					t.Fatalf("%s(%q) = false, want true (the key exists)", fault.name, key)
				}
				if loss := lossOf(t, ctx, lock); loss.Reason != lease.LossReadRefused {
					t.Fatalf("loss reason %v, want %v", loss.Reason, lease.LossReadRefused)
				}
				t.Logf("%s seen by the holder %v after the fault", fault.name, time.Since(faulted))
				if lock.State() != lease.StateLost {
					t.Errorf("state %v, want Lost", lock.State())
				}
				checkFaultResult(t, ctx, srv, locks, lock, fault.gone)
			})
		}
	})
}

// checkFaultResult checks the key after a fault: gone, or another owner's
// token with the lease's TTL kept.
func checkFaultResult(t *testing.T, ctx context.Context, srv *leasetest.Server, locks *lease.Locks, lock *lease.Lock, gone bool) {
	t.Helper()
	key := locks.KeyPrefix() + lock.Key()
	owner, found, err := locks.OwnerToken(ctx, lock.Key())
	switch {
	case err != nil:
		t.Fatalf("OwnerToken: %v", err)
	case gone && found:
		t.Errorf("key %q still exists", key)
	case !gone && (!found || owner == lock.Token()):
		t.Errorf("key %q: found %v, the holder's token %v; want another owner's", key, found, owner == lock.Token())
	}
	if gone {
		return
	}
	pttl, err := strconv.Atoi(strings.TrimPrefix(reply(srv, "PTTL", key), ":"))
	if err != nil || pttl <= 0 || pttl > int(lock.Duration().Milliseconds()) {
		t.Errorf("PTTL %q after Steal = %d, %v; want the lease's TTL kept (0, %d]", key, pttl, err, lock.Duration().Milliseconds())
	}
}

// TestKitFaultsAreObserved_HolderWithoutPushLosesAtItsRenewal: without
// push the same faults end a keep-alive holder's context at its next
// renewal, which the server refuses (LossRefused).
func TestKitFaultsAreObserved_HolderWithoutPushLosesAtItsRenewal(t *testing.T) {
	forEachProfile(t, func(t *testing.T, srv *leasetest.Server) {
		locks := srv.Locks(lease.WithoutPush())
		for _, fault := range keyFaults {
			t.Run(fault.name, func(t *testing.T) {
				ctx := boundedCtx(t)
				lock := acquire(t, ctx, locks, "report:"+fault.name, 2*time.Second)
				faulted := time.Now()
				if !fault.apply(srv, lock.Key()) {
					t.Fatalf("%s(%q) = false, want true", fault.name, lock.Key())
				}
				if loss := lossOf(t, ctx, lock); loss.Reason != lease.LossRefused {
					t.Fatalf("loss reason %v, want %v (the renewal refused)", loss.Reason, lease.LossRefused)
				}
				t.Logf("%s seen by the holder %v after the fault (renewal at about 1s)", fault.name, time.Since(faulted))
				checkFaultResult(t, ctx, srv, locks, lock, fault.gone)
			})
		}
	})
}

// TestKitFaultsAreObserved_DeleteAndExpireWakeAWaiter: a waiter parked on
// a key another process holds, with a safety-net poll an hour away, takes
// the lock as soon as Delete or Expire frees the key.
func TestKitFaultsAreObserved_DeleteAndExpireWakeAWaiter(t *testing.T) {
	forEachProfile(t, func(t *testing.T, srv *leasetest.Server) {
		holder, waiter := srv.Locks(), srv.Locks()
		for _, fault := range keyFaults[1:] {
			t.Run(fault.name, func(t *testing.T) {
				ctx := boundedCtx(t)
				key := "report:" + fault.name
				acquire(t, ctx, holder, key, 30*time.Second)
				mark := lastSeq(srv)
				got := make(chan error, 1)
				go func() {
					lock, err := waiter.Acquire(ctx, key, 30*time.Second,
						lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Hour))
					if err == nil {
						err = lock.Close()
					}
					got <- err
				}()
				// The waiter tracks the key with a read once its SET NX found it held.
				if _, err := srv.Sim().WaitFor(ctx, func(e sim.Entry) bool {
					return e.Seq > mark && len(e.Args) == 2 && strings.EqualFold(e.Args[0], "GET") && e.Args[1] == key
				}); err != nil {
					t.Fatalf("the waiter never read the key: %v", err)
				}
				freed := time.Now()
				if !fault.apply(srv, key) {
					t.Fatalf("%s(%q) = false, want true", fault.name, key)
				}
				if err := <-got; err != nil {
					t.Fatalf("waiter's Acquire = %v, want the lock", err)
				}
				t.Logf("waiter acquired %v after the %s", time.Since(freed), fault.name)
			})
		}
	})
}

// lastSeq returns the sequence number of the last command the node logged.
func lastSeq(srv *leasetest.Server) int64 {
	log := srv.Sim().Log()
	if len(log) == 0 {
		return 0
	}
	return log[len(log)-1].Seq
}

// TestKitFaultsAreObserved_MissingKeyChangesNothing: a fault on a key that
// does not exist reports false and creates nothing.
func TestKitFaultsAreObserved_MissingKeyChangesNothing(t *testing.T) {
	srv := leasetest.Start(t)
	for _, fault := range keyFaults {
		if fault.apply(srv, "missing") {
			t.Errorf("%s(missing) = true, want false", fault.name)
		}
		if got := reply(srv, "EXISTS", "missing"); got != ":0" {
			t.Errorf("after %s(missing): EXISTS = %s, want :0", fault.name, got)
		}
	}
}
