package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/lease"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// forRedis84AndRealFaulty runs fn on a Redis 8.4 sim node on real time
// behind a fault proxy and, with real, on the real redis-server 7.0 (see
// forEachRealTimeFaultyServer), for rules that hold on the client side.
func forRedis84AndRealFaulty(t *testing.T, tr Transport, real bool, fn func(t *testing.T, f *faulty)) {
	t.Run(string(sim.Redis84), func(t *testing.T) {
		srv := startSim(t, sim.Config{Profile: sim.Redis84, History: true})
		p, err := faultproxy.Start(srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		fn(t, &faulty{target: &target{tr: tr, profile: sim.Redis84, srv: srv, password: simPassword}, proxy: p})
	})
	if !real {
		return
	}
	t.Run("real-redis-7.0", func(t *testing.T) {
		addr, password := realRedis70(t)
		realserver.Lock(t, addr)
		srv := startRealServer(t, addr, password)
		p, err := faultproxy.Start(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		fn(t, &faulty{target: &target{tr: tr, profile: sim.Redis70, srv: srv, password: password, real: true}, proxy: p})
	})
}

// closeSlack is how much later than its bound a Close may return on a
// loaded machine (race detector, two cores).
const closeSlack = 3 * time.Second

// TestBoundedClose_CloseReturnsWithinTheRemainingLeasePlusFenceTimeoutOnAPausedServer:
// nothing gets through to the server or back (every proxied socket
// stalled both ways), and Close of a 300ms lease returns on its own — not
// before the lease ended, and no later than RemainingEstimate() +
// FenceTimeout (with slack) — swallowing the unknown outcome; the lock is
// no longer Held. Unbounded, it would wait for the server for ever.
func caseBoundedClose_CloseReturnsWithinTheRemainingLeasePlusFenceTimeoutOnAPausedServer(t *testing.T, tr Transport) {
	const ttl = 300 * time.Millisecond
	// The bound is the client's: one sim profile and the real server
	// suffice (each run takes FenceTimeout).
	forRedis84AndRealFaulty(t, tr, true, func(t *testing.T, f *faulty) {
		locks := f.locks(t, lease.WithIdleCheck(time.Hour)) // no liveness PING ahead of the delete
		lock, err := locks.Acquire(ctxT(t), "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		f.proxy.StallAll(faultproxy.Both) // the server is paused
		remaining := lock.RemainingEstimate()
		start := time.Now()
		closed := make(chan error, 1)
		go func() { closed <- lock.Close() }()
		bound := remaining + lease.FenceTimeout
		select {
		case err := <-closed:
			took := time.Since(start)
			if err != nil {
				t.Fatalf("Close = %v; want nil (the lease is over, the unknown outcome is harmless)", err)
			}
			if took < remaining {
				t.Fatalf("Close returned after %v, before the lease's remaining %v ended, with the server paused", took, remaining)
			}
			t.Logf("Close returned after %v (bound %v)", took, bound)
		case <-time.After(bound + closeSlack):
			t.Fatalf("Close still blocked after %v; want it bounded by RemainingEstimate %v + FenceTimeout", bound+closeSlack, remaining)
		}
		if st := lock.State(); st == lease.StateHeld || st == lease.StateReleased {
			t.Fatalf("state %v after a Close whose delete got no answer; want neither Held nor Released", st)
		}
	})
}

// TestBoundedClose_CloseOfAKeepAliveLockWithARenewalStalledReturnsWithinTheBound:
// the lock's session is stalled both ways with a keep-alive renewal on it;
// Close, which first waits for the renewal in flight, still returns by
// RemainingEstimate() + FenceTimeout (with slack), the lock not Held.
func caseBoundedClose_CloseOfAKeepAliveLockWithARenewalStalledReturnsWithinTheBound(t *testing.T, tr Transport) {
	const ttl = 300 * time.Millisecond
	forRedis84AndRealFaulty(t, tr, false, func(t *testing.T, f *faulty) {
		locks := f.locks(t, lease.WithIdleCheck(time.Hour))
		lock, err := locks.Acquire(ctxT(t), "k", ttl, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		session := f.sessionConn(t, lock)
		session.Stall(faultproxy.Both)
		if err := session.WaitBuffered(ctxT(t), faultproxy.ToServer, 1); err != nil {
			t.Fatal(err) // the keep-alive's renewal is stuck on the socket
		}
		remaining := lock.RemainingEstimate()
		start := time.Now()
		closed := make(chan error, 1)
		go func() { closed <- lock.Close() }()
		bound := remaining + lease.FenceTimeout
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close = %v; want nil", err)
			}
			t.Logf("Close returned after %v (bound %v)", time.Since(start), bound)
		case <-time.After(bound + closeSlack):
			t.Fatalf("Close still blocked after %v; want it bounded by RemainingEstimate %v + FenceTimeout", bound+closeSlack, remaining)
		}
		if st := lock.State(); st == lease.StateHeld || st == lease.StateReleased {
			t.Fatalf("state %v; want neither Held nor Released", st)
		}
	})
}

// TestBoundedClose_CloseContextReturnsTheContextsCauseWhenItEndsFirst: on a
// paused server, CloseContext returns once its ctx ended and the fence of
// its delete's socket had its chance (FenceTimeout: rule FenceBeforeReturn),
// with ctx's cause and ErrFencePending (the fence could not answer); the
// lock is no longer Held. One sim profile and the real server: each run
// takes FenceTimeout.
func caseBoundedClose_CloseContextReturnsTheContextsCauseWhenItEndsFirst(t *testing.T, tr Transport) {
	const wait = 200 * time.Millisecond
	forRedis84AndRealFaulty(t, tr, true, func(t *testing.T, f *faulty) {
		locks := f.locks(t, lease.WithIdleCheck(time.Hour)) // no liveness PING ahead of the delete
		lock, err := locks.Acquire(ctxT(t), "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		f.proxy.StallAll(faultproxy.Both)
		cause := errors.New("test: the caller gave up")
		ctx, cancel := context.WithTimeoutCause(context.Background(), wait, cause)
		defer cancel()
		closed := make(chan error, 1)
		go func() { closed <- lock.CloseContext(ctx) }()
		select {
		case err := <-closed:
			if ctx.Err() == nil {
				t.Fatalf("CloseContext = %v before its ctx ended, with the server paused", err)
			}
			if !errors.Is(err, cause) || !errors.Is(err, lease.ErrFencePending) {
				t.Fatalf("CloseContext = %v; want ctx's cause, the fence not answered", err)
			}
			assertOneLeasePrefix(t, "CloseContext", err)
		case <-time.After(wait + lease.FenceTimeout + closeSlack):
			t.Fatalf("CloseContext still blocked %v after its ctx of %v", lease.FenceTimeout+closeSlack, wait)
		}
		if st := lock.State(); st == lease.StateHeld || st == lease.StateReleased {
			t.Fatalf("state %v; want neither Held nor Released while the delete's outcome is unknown", st)
		}
	})
}

// TestBoundedClose_CloseContextWithAnEndedContextStillLetsTheLeaseEnd:
// CloseContext whose ctx has already ended sends nothing and returns ctx's
// cause, but the lock must still end at its lease's end at the latest: its
// keep-alive is stopped, nothing renews it, and its context ends with
// ErrExpired at the estimate.
func caseBoundedClose_CloseContextWithAnEndedContextStillLetsTheLeaseEnd(t *testing.T, tr Transport) {
	srv, clock, lock := acquireWithClock(t, tr, 10*time.Second, lease.WithKeepAlive())
	lockCtx := lock.Context()
	cause := errors.New("test: the caller gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	srv.ResetLog()
	err := lock.CloseContext(ctx)
	if !errors.Is(err, cause) {
		t.Fatalf("CloseContext with an ended ctx = %v; want its cause", err)
	}
	assertOneLeasePrefix(t, "CloseContext", err)
	if st := lock.State(); st != lease.StateHeld {
		t.Fatalf("state %v; want Held (nothing was sent)", st)
	}
	remaining := lock.RemainingEstimate()
	clock.Advance(remaining - time.Millisecond) // past the renewal time of a keep-alive
	if lockCtx.Err() != nil {
		t.Fatalf("the lock's context ended before the estimate: %v", context.Cause(lockCtx))
	}
	clock.Advance(time.Millisecond)
	if got := causeOf(t, lockCtx); got != lease.ErrExpired {
		t.Fatalf("the lock's context cause %v; want ErrExpired (no keep-alive renews it any more)", got)
	}
	if got := lockCommands(srv.Log()); len(got) != 0 {
		t.Fatalf("commands sent after CloseContext with an ended ctx: %v; want none (no renewal, no release)", got)
	}
}

func init() {
	register(
		Case{"BoundedClose_CloseReturnsWithinTheRemainingLeasePlusFenceTimeoutOnAPausedServer", caseBoundedClose_CloseReturnsWithinTheRemainingLeasePlusFenceTimeoutOnAPausedServer},
		Case{"BoundedClose_CloseOfAKeepAliveLockWithARenewalStalledReturnsWithinTheBound", caseBoundedClose_CloseOfAKeepAliveLockWithARenewalStalledReturnsWithinTheBound},
		Case{"BoundedClose_CloseContextReturnsTheContextsCauseWhenItEndsFirst", caseBoundedClose_CloseContextReturnsTheContextsCauseWhenItEndsFirst},
		Case{"BoundedClose_CloseContextWithAnEndedContextStillLetsTheLeaseEnd", caseBoundedClose_CloseContextWithAnEndedContextStillLetsTheLeaseEnd},
	)
}
