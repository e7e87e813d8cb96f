package leasesuite

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// TestPushHandsOverWithinOneLocks_ParkedWaitersGetTheKeyWithTheRelease: 4
// goroutines of one Locks take one key in turn (retry interval a minute),
// each releasing once the others are parked on it: the releases hand the
// key over to a parked waiter in the same command (most hand-offs are
// hand-overs), never to two holders at once; and a waiter of another
// Locks (another process), parked on the key meanwhile, gets it too: a
// run of hand-overs is bounded (64 releases, or 100 ms), then a release
// frees the key for every process.
func casePushHandsOverWithinOneLocks_ParkedWaitersGetTheKeyWithTheRelease(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		const key, waiters, handoffs = "push:handover", 4, 40
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()
		locks := newLocks(t, tr, clientOf([]string{tg.srv.Addr()}, "", tg.password, true))
		other := newLocks(t, tr, clientOf([]string{tg.srv.Addr()}, "", tg.password, true))
		first, err := locks.Acquire(ctx, key, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var (
			holders, released atomic.Int64
			otherGot          = make(chan struct{})
			failed            = make(chan error, waiters+1)
			wg                sync.WaitGroup
		)
		hold := func(lock *lease.Lock, parked func() bool) error {
			if n := holders.Add(1); n != 1 {
				return errors.New("two holders of the key at once")
			}
			for !parked() && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			holders.Add(-1)
			_, err := lock.Release(context.Background())
			released.Add(1)
			return err
		}
		for range waiters {
			wg.Go(func() {
				for ctx.Err() == nil {
					lock, err := locks.Acquire(ctx, key, 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
					if err == nil {
						err = hold(lock, func() bool { return parkedWaiters(locks, key) == waiters-1 })
					}
					if err != nil && ctx.Err() == nil {
						failed <- err
						return
					}
				}
			})
		}
		wg.Go(func() {
			for released.Load() < 4 && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			lock, err := other.Acquire(ctx, key, 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
			if err == nil {
				close(otherGot)
				err = hold(lock, func() bool { return true })
			}
			if err != nil && ctx.Err() == nil {
				failed <- err
			}
		})
		eventually(t, "4 parked", func() bool { return parkedWaiters(locks, key) == waiters })
		if _, err := first.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-otherGot:
		case <-ctx.Done():
		case err := <-failed:
			t.Fatal(err)
		}
		for released.Load() < handoffs && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
		wg.Wait()
		close(failed)
		for err := range failed {
			t.Fatal(err)
		}
		n, overs := released.Load(), leaseinternal.Driver(locks).PushStats().HandOvers
		t.Logf("%d releases, %d hand-overs", n, overs)
		select {
		case <-otherGot:
		default:
			t.Fatalf("the other Locks' waiter never got the key in %d releases", n)
		}
		if n < handoffs || int64(overs) < n/2 {
			t.Fatalf("%d hand-overs in %d releases; want at least %d releases, half of them hand-overs", overs, n, handoffs)
		}
	})
}

func init() {
	register(
		Case{"PushHandsOverWithinOneLocks_ParkedWaitersGetTheKeyWithTheRelease", casePushHandsOverWithinOneLocks_ParkedWaitersGetTheKeyWithTheRelease},
	)
}

// TestPushHandsOverWithinOneLocks_AWaiterThatGaveUpDuringTheHandOverLeavesNoKey:
// the release carried a parked waiter's try and the script gave it the key,
// but the waiter's ctx ended before the reply came (held by the server):
// the release answers Released, the waiter's Acquire returns its ctx's
// cause, and the key it got is deleted by the abandoned try's clean-up, so
// that nobody waits for a lease no one holds.
func casePushHandsOverWithinOneLocks_AWaiterThatGaveUpDuringTheHandOverLeavesNoKey(t *testing.T, tr Transport) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			h := holdHandOver(t, tr, profile, "push:handover:gaveup")
			h.giveUp()
			h.open()
			if out := <-h.released; out != lease.Released {
				t.Fatalf("the holder's release: %v; want Released", out)
			}
			if err := <-h.got; !errors.Is(err, context.Canceled) {
				t.Fatalf("the waiter's Acquire: %v; want context.Canceled", err)
			}
			eventually(t, "the abandoned waiter's key deleted", func() bool { return strings.HasPrefix(h.srv.Exec("EXISTS", h.key), ":0") })
		})
	}
}

// isHandOver reports whether args run conn.HandOverScript (EVALSHA, or
// EVAL after NOSCRIPT).
func isHandOver(args []string) bool {
	return len(args) > 1 && (strings.EqualFold(args[0], "EVALSHA") && args[1] == conn.HandOverScriptSHA ||
		strings.EqualFold(args[0], "EVAL") && args[1] == conn.HandOverScript)
}

// waitHistory waits until srv ran a command that match accepts, and returns it.
func waitHistory(t *testing.T, srv *sim.Server, match func(sim.Execution) bool) sim.Execution {
	t.Helper()
	var found sim.Execution
	eventually(t, "the command ran", func() bool {
		for _, e := range srv.History() {
			if len(e.Args) > 1 && match(e) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

func init() {
	register(
		Case{"PushHandsOverWithinOneLocks_AWaiterThatGaveUpDuringTheHandOverLeavesNoKey", casePushHandsOverWithinOneLocks_AWaiterThatGaveUpDuringTheHandOverLeavesNoKey},
	)
}
