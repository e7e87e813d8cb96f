package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

// pushStatsOf returns what the push hub of locks did so far.
func pushStatsOf(locks *lease.Locks) actor.PushStats { return leaseinternal.Driver(locks).PushStats() }

// parkedWaiters returns how many waiters of wireKey are parked on a tracked
// key (armed, no baton out).
func parkedWaiters(locks *lease.Locks, wireKey string) int {
	k := leaseinternal.Driver(locks).PushKey(wireKey)
	if !k.Entry || !k.Armed || k.BatonOut {
		return 0
	}
	return k.Waiters
}

// holderArmed reports whether a holder of wireKey is registered and its key
// tracked: its last read answered with no invalidation since, no read is
// queued or in flight and no retry is pending. Holders keep no entry while
// their key is tracked; one exists only while a read is due or waiters
// wait (then its armed flag says whether the key is tracked).
func holderArmed(locks *lease.Locks, wireKey string) bool {
	k := leaseinternal.Driver(locks).PushKey(wireKey)
	if k.Holders == 0 || k.RetryPending {
		return false
	}
	return !k.Entry || k.Armed && !k.Queued && !k.Reading
}

type acquired struct {
	lock *lease.Lock
	err  error
	at   time.Time
}

// TestPushWakesWaiters_OnRelease: a waiter whose retry interval is a minute
// gets the lock within the test deadline after the holder's release, so the
// push, not the safety-net poll, woke it; one SET NX per hand-off.
func casePushWakesWaiters_OnRelease(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		holderLocks, waiterLocks := tg.locks(t), tg.locks(t)
		holder, err := holderLocks.Acquire(ctx, "push:k", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan acquired, 1)
		go func() {
			lock, err := waiterLocks.Acquire(ctx, "push:k", 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
			got <- acquired{lock, err, time.Now()}
		}()
		eventually(t, "the waiter parked on the tracked key", func() bool { return parkedWaiters(waiterLocks, "push:k") == 1 })
		tg.srv.ResetLog()
		released := time.Now()
		if out, err := holder.Release(ctx); err != nil || out != lease.Released {
			t.Fatalf("Release: %v %v", out, err)
		}
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatal(r.err)
			}
			t.Logf("hand-off: %v from the release call to the waiter's acquisition", r.at.Sub(released))
			defer r.lock.Close()
		case <-ctx.Done():
			t.Fatal("the waiter was not woken by the release (its retry interval is a minute)")
		}
		if n := countSetNX(tg.srv.Log(), "push:k"); n != 1 {
			t.Errorf("SET NX after the release: %d, want 1", n)
		}
	})
}

// countSetNX counts SET key … NX … in log.
func countSetNX(log []sim.Entry, key string) int {
	n := 0
	for _, e := range log {
		if len(e.Args) >= 4 && strings.EqualFold(e.Args[0], "SET") && e.Args[1] == key && strings.EqualFold(e.Args[3], "NX") {
			n++
		}
	}
	return n
}

// TestPushDetectsLoss_ThirdPartyWrite: a holder with a keep-alive (lease
// 30s, first renewal at 15s) learns within the test deadline that a third
// party deleted or overwrote its key: its Context ends with a *LossError
// whose Reason is LossReadRefused, confirmed by a GET of the key.
func casePushDetectsLoss_ThirdPartyWrite(t *testing.T, tr Transport) {
	for _, change := range [][]string{{"DEL", "push:held"}, {"SET", "push:held", "someone-else"}} {
		t.Run(change[0], func(t *testing.T) {
			forEachServer(t, tr, func(t *testing.T, tg *target) {
				ctx := ctxT(t)
				locks := tg.locks(t)
				lock, err := locks.Acquire(ctx, "push:held", 30*time.Second, lease.WithKeepAlive())
				if err != nil {
					t.Fatal(err)
				}
				defer lock.Close()
				eventually(t, "the holder's key tracked", func() bool { return holderArmed(locks, "push:held") })
				tg.srv.ResetLog()
				changed := time.Now()
				tg.srv.Exec(change...)
				select {
				case <-lock.Context().Done():
					t.Logf("loss detected %v after the %s", time.Since(changed), change[0])
				case <-ctx.Done():
					t.Fatal("the holder did not learn of the change")
				}
				var loss *lease.LossError
				if cause := context.Cause(lock.Context()); !errors.As(cause, &loss) || loss.Reason != lease.LossReadRefused ||
					!errors.Is(cause, lease.ErrOwnershipLost) {
					t.Fatalf("cause %v, want a LossError with LossReadRefused", cause)
				}
				if n := count(tg.srv.Log(), "GET"); n < 1 {
					t.Errorf("no confirming GET in %v", tg.srv.Log())
				}
				if lock.State() != lease.StateLost {
					t.Errorf("state %v, want Lost", lock.State())
				}
			})
		})
	}
}

// TestPushDetectsLoss_NeverRefutesALaterHolder: a holder's read that was
// sent before another handle of the same Locks took the key (its release
// deleted the key, the next one set it) judges only the holders registered
// before it: the later holder stays held and releases Released, 50 times
// in a row (Example_jobRunner once found it NotOwned).
func casePushDetectsLoss_NeverRefutesALaterHolder(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		locks := tg.locks(t)
		for i := range 50 {
			lock, err := locks.Acquire(ctx, "push:next", 10*time.Second, lease.WithKeepAlive())
			if err != nil {
				t.Fatal(err)
			}
			if out, err := lock.Release(ctx); out != lease.Released || err != nil {
				t.Fatalf("round %d: Release = %v, %v; want Released (cause %v)", i, out, err, context.Cause(lock.Context()))
			}
		}
		if n := pushStatsOf(locks).Refuted; n != 0 {
			t.Fatalf("%d holders refuted; want 0", n)
		}
	})
}

// pushEntries returns how many keys of locks' push hub have an entry.
func pushEntries(locks *lease.Locks) int { return leaseinternal.Driver(locks).PushEntries() }

// TestPushDetectsLoss_HolderNeedsNoEntryWhenIdle: a keep-alive holder whose
// key is tracked costs no pushKey, only its place in the hub's held chain;
// a change of its key (a PEXPIRE that keeps its token) makes an entry for
// the read, gone once the read confirmed the holder; its release takes it
// out of held.
func casePushDetectsLoss_HolderNeedsNoEntryWhenIdle(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "push:idle", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the holder's key tracked", func() bool { return holderArmed(locks, "push:idle") })
	if n := pushEntries(locks); n != 0 {
		t.Fatalf("%d entries while the holder's key is tracked; want 0", n)
	}
	if chain := leaseinternal.Driver(locks).PushHolders("push:idle"); len(chain) != 1 || chain[0] != coreOf(lock) {
		t.Fatalf("held chain %v; want the lock alone", chain)
	}
	before := pushStatsOf(locks).HolderReads
	srv.Exec("PEXPIRE", "push:idle", "30000")
	eventually(t, "the holder's read after the change", func() bool {
		return pushStatsOf(locks).HolderReads > before && holderArmed(locks, "push:idle")
	})
	if n := pushEntries(locks); n != 0 || lock.State() != lease.StateHeld {
		t.Fatalf("%d entries after the read, state %v; want 0, Held", n, lock.State())
	}
	if out, err := lock.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
	if chain := leaseinternal.Driver(locks).PushHolders("push:idle"); len(chain) != 0 {
		t.Fatalf("held chain %v after the release; want none", chain)
	}
	eventually(t, "no entry left", func() bool { return pushEntries(locks) == 0 })
}

// TestPushDetectsLoss_TwoHoldersOfOneKeyAreJudgedApart: a holder that missed
// the push of a third party's DEL and the holder that took the key next in
// the same Locks are chained for the key; the read that follows the second
// one's registration ends the first (LossReadRefused) and confirms the
// second, which alone stays chained until its release empties the chain.
func casePushDetectsLoss_TwoHoldersOfOneKeyAreJudgedApart(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
	ctx := ctxT(t)
	first, err := locks.Acquire(ctx, "push:two", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first holder's key tracked", func() bool { return holderArmed(locks, "push:two") })
	srv.Inject(sim.Fault{Kind: sim.DropPush, Key: "push:two"})
	srv.Exec("DEL", "push:two") // its push is lost: the first holder still holds, locally
	second, err := locks.Acquire(ctx, "push:two", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, first.Context())
	var loss *lease.LossError
	if !errors.As(context.Cause(first.Context()), &loss) || loss.Reason != lease.LossReadRefused {
		t.Fatalf("first holder's cause %v; want LossReadRefused", context.Cause(first.Context()))
	}
	eventually(t, "the second holder's key tracked", func() bool { return holderArmed(locks, "push:two") })
	if second.State() != lease.StateHeld {
		t.Fatalf("second holder %v (cause %v); want Held", second.State(), context.Cause(second.Context()))
	}
	if chain := leaseinternal.Driver(locks).PushHolders("push:two"); len(chain) != 1 || chain[0] != coreOf(second) {
		t.Fatalf("held chain %v; want the second holder alone", chain)
	}
	if out, err := second.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
	if chain := leaseinternal.Driver(locks).PushHolders("push:two"); len(chain) != 0 {
		t.Fatalf("held chain %v after the release; want none", chain)
	}
}

func init() {
	register(
		Case{"PushWakesWaiters_OnRelease", casePushWakesWaiters_OnRelease},
		Case{"PushDetectsLoss_ThirdPartyWrite", casePushDetectsLoss_ThirdPartyWrite},
		Case{"PushDetectsLoss_NeverRefutesALaterHolder", casePushDetectsLoss_NeverRefutesALaterHolder},
		Case{"PushDetectsLoss_HolderNeedsNoEntryWhenIdle", casePushDetectsLoss_HolderNeedsNoEntryWhenIdle},
		Case{"PushDetectsLoss_TwoHoldersOfOneKeyAreJudgedApart", casePushDetectsLoss_TwoHoldersOfOneKeyAreJudgedApart},
	)
}
