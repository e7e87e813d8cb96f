package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/coordination"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// eventually polls cond (bounded) for state that settles asynchronously.
func eventuallyTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitRenewed waits (bounded) until lock's lease was confirmed again: its
// expiry estimate moved past the one it had.
func waitRenewed(t *testing.T, lock *coordination.Lock) {
	t.Helper()
	before := lock.ExpiresAtEstimate()
	eventuallyTrue(t, "a confirmed renewal", func() bool {
		return lock.ExpiresAtEstimate().After(before.Add(lock.Duration() / 4))
	})
}

// A fenced lock acquired with lease.WithKeepAlive is renewed in the
// background with its fencing token unchanged; when another owner takes the
// key (found by the read a push triggers, or by a renewal), its Context ends
// with a *lease.LossError and the lock is lost.
func caseFencedLockKeepAliveRenewsUntilARenewalIsRefused(t *testing.T, tr Transport) {
	const ttl = time.Second
	forEachCoordServer(t, tr, func(t *testing.T, s coordServer) {
		c := newCoordinator(t, tr, []string{s.addr}, s.password, s.prefix)
		lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, ttl, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		work := lock.Context()
		waitRenewed(t, lock)
		waitRenewed(t, lock) // two leases' worth: only renewals kept it
		if err := work.Err(); err != nil || lock.State() != lease.StateHeld || lock.FencingToken() != 1 {
			t.Fatalf("after renewals: context %v, state %v, token %d; want live, Held, 1", context.Cause(work),
				lock.State(), lock.FencingToken())
		}
		if held, err := lock.VerifyStillHeld(ctxT(t)); !held || err != nil {
			t.Fatalf("VerifyStillHeld = %v, %v", held, err)
		}
		s.exec(t, "SET", s.prefix+leaseKey, "outsider", "PX", "60000") // the lease is taken from under it
		waitDone(t, work)
		var loss *lease.LossError
		// The outsider's write is found by the push-driven read at once, or
		// (if the push came late) by the next renewal.
		if cause := context.Cause(work); !errors.As(cause, &loss) ||
			loss.Reason != lease.LossReadRefused && loss.Reason != lease.LossRefused ||
			!errors.Is(cause, lease.ErrOwnershipLost) {
			t.Fatalf("cause %v; want a *lease.LossError, read-refused or refused", cause)
		}
		if st := lock.State(); st != lease.StateLost {
			t.Fatalf("state %v; want Lost", st)
		}
		if out, err := lock.Release(ctxT(t)); out != lease.NotOwned || err != nil {
			t.Fatalf("Release = %v, %v; want NotOwned", out, err)
		}
		if got := s.exec(t, "GET", s.prefix+leaseKey); got != "outsider" {
			t.Fatalf("the outsider's lease = %q; want it untouched", got)
		}
	})
}

// KeepAlive on a fenced lock renews it like lease.WithKeepAlive, and Stop
// leaves it held.
func caseFencedLockKeepAliveStartedLaterAndStopped(t *testing.T, tr Transport) {
	_, c := simCoordinator(t, tr, sim.Valkey90)
	lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	ka, err := lock.KeepAlive(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	waitRenewed(t, lock)
	ka.Stop()
	if !errors.Is(ka.Err(), lease.ErrKeepAliveStopped) || lock.State() != lease.StateHeld || lock.Context().Err() != nil {
		t.Fatalf("after Stop: keep-alive %v, state %v, lock context %v; want stopped, Held, live",
			ka.Err(), lock.State(), lock.Context().Err())
	}
}

func caseFencedLockContextEndsOnReleaseAndOnExpiry(t *testing.T, tr Transport) {
	forEachCoordServer(t, tr, func(t *testing.T, s coordServer) {
		c := newCoordinator(t, tr, []string{s.addr}, s.password, s.prefix)
		released, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		work := released.Context()
		if out, err := released.Release(ctxT(t)); out != lease.Released || err != nil {
			t.Fatalf("Release = %v, %v", out, err)
		}
		if cause := context.Cause(work); work.Err() == nil || !errors.Is(cause, lease.ErrReleased) {
			t.Fatalf("after Release the context's cause is %v; want lease.ErrReleased", cause)
		}

		const ttl = 300 * time.Millisecond // no keep-alive: the lease runs out
		expiring, err := c.Acquire(ctxT(t), leaseKey, counterKey, ttl)
		if err != nil || expiring.FencingToken() != 2 {
			t.Fatalf("Acquire = %v, %v; want token 2", expiring, err)
		}
		work = expiring.Context()
		waitDone(t, work)
		if cause := context.Cause(work); !errors.Is(cause, lease.ErrExpired) {
			t.Fatalf("cause %v; want lease.ErrExpired", cause)
		}
		if st, left := expiring.State(), expiring.RemainingEstimate(); st == lease.StateHeld || left != 0 {
			t.Fatalf("state %v, remaining %v once the lease ran out; want not Held, 0", st, left)
		}
		if out, err := expiring.Release(ctxT(t)); out != lease.NotOwned || err != nil {
			t.Fatalf("Release of the expired lock = %v, %v; want NotOwned", out, err)
		}
	})
}

// Concurrent releases share one delete: a Release made while the delete is
// on the wire joins it (here its ctx ends first: it stops waiting and
// sends nothing), and the release keeps the counter.
func caseConcurrentReleasesOfAFencedLockShareOneDelete(t *testing.T, tr Transport) {
	srv, c := simCoordinator(t, tr, sim.Redis84)
	lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "DELEX", Gate: gate})
	type result struct {
		out lease.ReleaseOutcome
		err error
	}
	results := make(chan result, 3)
	release := func(ctx context.Context) {
		out, err := lock.Release(ctx)
		results <- result{out, err}
	}
	go release(ctxT(t))
	if _, err := srv.WaitFor(ctxT(t), isRelease(leaseKey)); err != nil {
		t.Fatal(err)
	}
	go release(ctxT(t))
	go release(ctxT(t))
	short, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
	defer cancel()
	if out, err := lock.Release(short); !errors.Is(err, context.DeadlineExceeded) || out != 0 {
		t.Fatalf("Release joined while the delete is held = %v, %v; want it to stop waiting at its deadline", out, err)
	}
	close(gate)
	released := 0
	for range 3 {
		r := <-results
		switch {
		case r.err != nil:
			t.Fatalf("Release = %v", r.err)
		case r.out == lease.Released:
			released++
		case r.out != lease.AlreadyReleased:
			t.Fatalf("Release = %v; want Released or AlreadyReleased", r.out)
		}
	}
	if n := len(filter(srv.Log(), isRelease(leaseKey))); n != 1 || released == 0 {
		t.Fatalf("%d deletes sent, %d callers told Released; want exactly 1 delete, shared", n, released)
	}
	next, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
	if err != nil || next.FencingToken() != 2 {
		t.Fatalf("next Acquire = %v, %v; want token 2", next, err)
	}
	_ = next.Close()
}

func filter(log []sim.Entry, match func(sim.Entry) bool) []sim.Entry {
	var out []sim.Entry
	for _, e := range log {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

// Errors read with one prefix and match lease's sentinels.
func caseErrorsReadWithOnePrefixAndMatchLeasesSentinels(t *testing.T, tr Transport) {
	_, c := simCoordinator(t, tr, sim.Redis70)
	holder, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	_, err = c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
	if want := `lease: Acquire "{job}:lease": not acquired: another owner holds the lock`; err == nil ||
		err.Error() != want || !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("contended Acquire = %v; want %q matching lease.ErrNotAcquired", err, want)
	}
	_, err = c.TryAcquire(ctxT(t), leaseKey, leaseKey, time.Minute)
	if want := `lease: TryAcquire "{job}:lease": lock and fencing counter keys must differ`; err == nil || err.Error() != want {
		t.Fatalf("same keys = %v; want %q", err, want)
	}
	locksOf(c).Close()
	_, err = c.TryAcquire(ctxT(t), leaseKey, counterKey, time.Minute)
	if !errors.Is(err, lease.ErrClosed) || !errors.Is(err, lease.ErrNotSubmitted) || strings.Count(err.Error(), ":") < 2 ||
		strings.Count(err.Error(), "lease:")+strings.Count(err.Error(), "coordination:") != 1 {
		t.Fatalf("TryAcquire on a closed Locks = %v; want lease.ErrClosed, one prefix", err)
	}
}

// WithReplicas belongs to fenced locks: lease.Locks refuses it before
// sending anything.
func caseLeaseLocksRefuseWithReplicas(t *testing.T, tr Transport) {
	srv, c := simCoordinator(t, tr, sim.Valkey81)
	srv.ResetLog()
	if _, err := locksOf(c).Acquire(ctxT(t), "k", time.Minute, coordination.WithReplicas(1, time.Second)); !errors.Is(err, lease.ErrInvalidOption) {
		t.Fatalf("lease Acquire with WithReplicas = %v; want lease.ErrInvalidOption", err)
	}
	if log := srv.Log(); len(log) != 0 {
		t.Fatalf("commands sent: %v", log)
	}
}

func init() {
	register(
		Case{"FencedLockKeepAliveRenewsUntilARenewalIsRefused", caseFencedLockKeepAliveRenewsUntilARenewalIsRefused},
		Case{"FencedLockKeepAliveStartedLaterAndStopped", caseFencedLockKeepAliveStartedLaterAndStopped},
		Case{"FencedLockContextEndsOnReleaseAndOnExpiry", caseFencedLockContextEndsOnReleaseAndOnExpiry},
		Case{"ConcurrentReleasesOfAFencedLockShareOneDelete", caseConcurrentReleasesOfAFencedLockShareOneDelete},
		Case{"ErrorsReadWithOnePrefixAndMatchLeasesSentinels", caseErrorsReadWithOnePrefixAndMatchLeasesSentinels},
		Case{"LeaseLocksRefuseWithReplicas", caseLeaseLocksRefuseWithReplicas},
	)
}
