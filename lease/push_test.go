package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// pushStatsOf returns what the push hub of locks did so far.
func pushStatsOf(locks *Locks) pushStats {
	h := locks.managed().push
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

// parkedWaiters returns how many waiters of wireKey are parked on a tracked
// key (armed, no baton out).
func parkedWaiters(locks *Locks, wireKey string) int {
	h := locks.managed().push
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.keys[wireKey]
	if e == nil || !e.armed || e.baton != nil {
		return 0
	}
	return len(e.waiters)
}

// holderArmed reports whether a holder of wireKey is registered and its key
// tracked, with no read in flight.
func holderArmed(locks *Locks, wireKey string) bool {
	h := locks.managed().push
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.keys[wireKey]
	return e != nil && len(e.holders) > 0 && e.armed && !e.check
}

type acquired struct {
	lock *Lock
	err  error
	at   time.Time
}

// TestPushWakesWaiters_OnRelease: a waiter whose retry interval is a minute
// gets the lock within the test deadline after the holder's release, so the
// push, not the safety-net poll, woke it; one SET NX per hand-off.
func TestPushWakesWaiters_OnRelease(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		holderLocks, waiterLocks := tg.locks(t), tg.locks(t)
		holder, err := holderLocks.Acquire(ctx, "push:k", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan acquired, 1)
		go func() {
			lock, err := waiterLocks.Acquire(ctx, "push:k", 30*time.Second, WithWaitUntilDone(), WithRetryEvery(time.Minute))
			got <- acquired{lock, err, time.Now()}
		}()
		eventually(t, "the waiter parked on the tracked key", func() bool { return parkedWaiters(waiterLocks, "push:k") == 1 })
		tg.srv.ResetLog()
		released := time.Now()
		if out, err := holder.Release(ctx); err != nil || out != Released {
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
func TestPushDetectsLoss_ThirdPartyWrite(t *testing.T) {
	for _, change := range [][]string{{"DEL", "push:held"}, {"SET", "push:held", "someone-else"}} {
		t.Run(change[0], func(t *testing.T) {
			forEachServer(t, func(t *testing.T, tg *target) {
				ctx := ctxT(t)
				locks := tg.locks(t)
				lock, err := locks.Acquire(ctx, "push:held", 30*time.Second, WithKeepAlive())
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
				var loss *LossError
				if cause := context.Cause(lock.Context()); !errors.As(cause, &loss) || loss.Reason != LossReadRefused ||
					!errors.Is(cause, ErrOwnershipLost) {
					t.Fatalf("cause %v, want a LossError with LossReadRefused", cause)
				}
				if n := count(tg.srv.Log(), "GET"); n < 1 {
					t.Errorf("no confirming GET in %v", tg.srv.Log())
				}
				if lock.State() != StateLost {
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
func TestPushDetectsLoss_NeverRefutesALaterHolder(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		locks := tg.locks(t)
		for i := range 50 {
			lock, err := locks.Acquire(ctx, "push:next", 10*time.Second, WithKeepAlive())
			if err != nil {
				t.Fatal(err)
			}
			if out, err := lock.Release(ctx); out != Released || err != nil {
				t.Fatalf("round %d: Release = %v, %v; want Released (cause %v)", i, out, err, context.Cause(lock.Context()))
			}
		}
		if n := pushStatsOf(locks).refuted; n != 0 {
			t.Fatalf("%d holders refuted; want 0", n)
		}
	})
}
