package leasesuite

import (
	"context"
	"errors"
	"strings"

	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/internal/faultproxy"
)

// TestAcquiredTooLate_AReplyAfterTheLeaseCouldHaveExpiredHandsOutNoLockAndCleansUp:
// the SET's reply is held on the socket while the lease's whole duration
// passes. TryAcquire and Acquire then return an error matching
// ErrAcquiredTooLate and no Lock, and the key is deleted again if it still
// holds that attempt's token — and left alone if another owner took it.
func caseAcquiredTooLate_AReplyAfterTheLeaseCouldHaveExpiredHandsOutNoLockAndCleansUp(t *testing.T, tr Transport) {
	const ttl = time.Minute
	type result struct {
		lock *lease.Lock
		err  error
	}
	calls := []struct {
		name    string
		acquire func(*lease.Locks, string) (*lease.Lock, error)
	}{
		{"TryAcquire", func(l *lease.Locks, key string) (*lease.Lock, error) {
			a, err := l.TryAcquire(context.Background(), key, ttl)
			if a.Acquired() != (a.Lock() != nil) {
				return nil, errors.New("Attempt.Acquired disagrees with Attempt.Lock")
			}
			return a.Lock(), err
		}},
		{"Acquire", func(l *lease.Locks, key string) (*lease.Lock, error) {
			return l.Acquire(context.Background(), key, ttl)
		}},
	}
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		loadScripts(f.target)
		locks := f.locks(t, lease.WithIdleCheck(time.Hour)) // no liveness PING ahead of the SET
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		session := f.connOf(t, leaseinternal.Driver(locks).StandaloneSession())
		for _, call := range calls {
			for _, takenOver := range []bool{false, true} {
				name := call.name
				if takenOver {
					name += " taken over meanwhile"
				}
				t.Run(name, func(t *testing.T) {
					key := "late-" + name
					session.Stall(faultproxy.ToClient)
					got := make(chan result, 1)
					go func() { lock, err := call.acquire(locks, key); got <- result{lock, err} }()
					set := waitEntry(t, f.srv, isCommand("SET", key))
					token := set.Args[2]
					// The log records arrivals: wait until the SET ran (the key
					// holds its token), so that another owner's SET below comes
					// after it, never before it (then the attempt would simply
					// have been refused).
					eventually(t, "the attempt's SET ran", func() bool {
						return strings.Contains(f.srv.Exec("GET", key), token)
					})
					clock.Advance(ttl) // the lease could have expired before the reply arrives
					if takenOver {
						f.srv.Exec("SET", key, "another-owner", "PX", "600000")
					}
					session.Unstall(faultproxy.ToClient)
					r := <-got
					if r.lock != nil || !errors.Is(r.err, lease.ErrAcquiredTooLate) {
						t.Fatalf("%s with a reply after the lease = %v, %v; want no lock and ErrAcquiredTooLate", call.name, r.lock, r.err)
					}
					assertOneLeasePrefix(t, call.name, r.err)
					leaseinternal.Driver(locks).WaitIdle() // the clean-up has settled
					if takenOver {
						if owner := f.srv.Exec("GET", key); owner != "$13\r\nanother-owner\r\n" {
							t.Fatalf("GET = %q; the clean-up must leave another owner's key", owner)
						}
						return
					}
					if got := f.srv.Exec("EXISTS", key); got != ":0\r\n" {
						t.Fatalf("EXISTS = %q; the dead-on-arrival lease was not cleaned up", got)
					}
					if n := deletesOf(f.target, token); n != 1 {
						t.Fatalf("%d deletes of the attempt's token ran; want 1", n)
					}
				})
			}
		}
		t.Run("a reply just in time is acquired", func(t *testing.T) {
			session.Stall(faultproxy.ToClient)
			got := make(chan result, 1)
			go func() { lock, err := locks.Acquire(context.Background(), "in-time", ttl); got <- result{lock, err} }()
			waitEntry(t, f.srv, isCommand("SET", "in-time"))
			clock.Advance(estimateOf(ttl) - time.Millisecond) // 1ms of the estimate left
			session.Unstall(faultproxy.ToClient)
			r := <-got
			if r.err != nil || r.lock == nil || r.lock.RemainingEstimate() != time.Millisecond {
				t.Fatalf("Acquire with a reply 1ms before the estimate ran out = %v, %v; want a lock with 1ms left", r.lock, r.err)
			}
		})
	})
}

func init() {
	register(
		Case{"AcquiredTooLate_AReplyAfterTheLeaseCouldHaveExpiredHandsOutNoLockAndCleansUp", caseAcquiredTooLate_AReplyAfterTheLeaseCouldHaveExpiredHandsOutNoLockAndCleansUp},
	)
}
