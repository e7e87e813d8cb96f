package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/lease"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

// These tests hold Lock.Context: it ends when the lease ends, for every
// reason, with the reason as its cause.

// TestLockContext_EndsWithErrReleasedOnRelease: Release and Close end the
// lock's context with ErrReleased.
func caseLockContext_EndsWithErrReleasedOnRelease(t *testing.T, tr Transport) {
	for _, end := range []struct {
		name    string
		release func(*lease.Lock) error
	}{
		{"Release", func(l *lease.Lock) error { _, err := l.Release(context.Background()); return err }},
		{"Close", func(l *lease.Lock) error { return l.Close() }},
	} {
		t.Run(end.name, func(t *testing.T) {
			_, _, lock := acquireWithClock(t, tr, 10*time.Second)
			ctx := lock.Context()
			if err := ctx.Err(); err != nil {
				t.Fatalf("the context of a held lock ended: %v", context.Cause(ctx))
			}
			if err := end.release(lock); err != nil {
				t.Fatalf("%s = %v", end.name, err)
			}
			if cause := causeOf(t, ctx); cause != lease.ErrReleased {
				t.Fatalf("after %s the cause is %v; want ErrReleased", end.name, cause)
			}
		})
	}
}

// TestLockContext_EndsWithErrExpiredAtTheEstimateWithoutKeepAlive: with no
// keep-alive the context ends with ErrExpired exactly when the local
// estimate runs out — the acquisition's send time plus the lease less the
// drift margin — while the server still holds the key for that margin.
func caseLockContext_EndsWithErrExpiredAtTheEstimateWithoutKeepAlive(t *testing.T, tr Transport) {
	const ttl = 10 * time.Second
	margin := sm.DefaultDrift().Of(ttl)
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t)
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		lock, err := locks.Acquire(ctxT(t), "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		ctx := lock.Context()
		advanceBoth(tg, clock, ttl-margin-time.Millisecond)
		if st := lock.State(); st != lease.StateHeld || ctx.Err() != nil {
			t.Fatalf("1ms before the estimate ran out: state %v, context cause %v; want Held and live", st, context.Cause(ctx))
		}
		advanceBoth(tg, clock, time.Millisecond) // send time + lease − margin: the clocks stop here
		if cause := causeOf(t, ctx); cause != lease.ErrExpired {
			t.Fatalf("cause %v; want ErrExpired", cause)
		}
		var pttl int64
		if _, err := fmtSscanInt(tg.srv.Exec("PTTL", "k"), &pttl); err != nil || pttl < int64(margin/time.Millisecond) {
			t.Fatalf("when the context ended the server's PTTL was %d ms (%v); want at least the drift margin %v", pttl, err, margin)
		}
		if st := lock.State(); st != lease.StateLost {
			t.Fatalf("state %v after the estimate ran out; want Lost", st)
		}
	})
}

// TestLockContext_EndsWithLossRefusedWhenAnotherOwnerTookTheKey: the key
// expired on the server and another owner took it while this handle's
// estimate still lasted; whichever command finds that out — ResetExpiry,
// Release or a keep-alive renewal — ends the context with a *LossError of
// reason LossRefused, matching ErrOwnershipLost.
func caseLockContext_EndsWithLossRefusedWhenAnotherOwnerTookTheKey(t *testing.T, tr Transport) {
	const ttl = 10 * time.Second
	detectors := []struct {
		name      string
		keepAlive bool
		detect    func(t *testing.T, lock *lease.Lock, clock *actor.ManualClock)
	}{
		{"ResetExpiry", false, func(t *testing.T, lock *lease.Lock, _ *actor.ManualClock) {
			if ok, err := lock.ResetExpiry(ctxT(t), ttl); ok || err != nil {
				t.Fatalf("ResetExpiry = %v, %v; want false", ok, err)
			}
		}},
		{"Release", false, func(t *testing.T, lock *lease.Lock, _ *actor.ManualClock) {
			if out, err := lock.Release(ctxT(t)); out != lease.NotOwned || err != nil {
				t.Fatalf("Release = %v, %v; want NotOwned", out, err)
			}
		}},
		{"keep-alive renewal", true, func(t *testing.T, lock *lease.Lock, clock *actor.ManualClock) {
			clock.Advance(sm.RenewalDelay(lock.Duration(), lock.RemainingEstimate()))
		}},
	}
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t, lease.WithoutPush()) // the detectors, not a push, must find the loss
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		for _, d := range detectors {
			t.Run(d.name, func(t *testing.T) {
				key := "k-" + d.name
				var opts []lease.AcquireOption
				if d.keepAlive {
					opts = append(opts, lease.WithKeepAlive())
				}
				lock, err := locks.Acquire(ctxT(t), key, ttl, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer lock.Close()
				ctx := lock.Context()
				takeOverAfterExpiry(t, tg, key, ttl)
				if ctx.Err() != nil {
					t.Fatalf("the context ended before anything found the loss: %v", context.Cause(ctx))
				}
				d.detect(t, lock, clock)
				loss := lossOf(t, causeOf(t, ctx))
				if loss.Reason != lease.LossRefused || loss.Err != nil {
					t.Fatalf("loss reason %v, error %v; want LossRefused and no error", loss.Reason, loss.Err)
				}
				if got := tg.srv.Exec("GET", key); got != "$13\r\nanother-owner\r\n" {
					t.Fatalf("GET = %q; the other owner's key must stay", got)
				}
			})
		}
	})
}

// TestLockContext_EndsWithLossDeadlineWhenNoRenewalIsConfirmedByTheDeadline:
// a keep-alive whose renewals the server refuses as not run (LOADING) keeps
// retrying; when the lease deadline comes with no renewal confirmed and
// none in flight, the context ends with LossDeadline.
func caseLockContext_EndsWithLossDeadlineWhenNoRenewalIsConfirmedByTheDeadline(t *testing.T, tr Transport) {
	srv, clock, lock := acquireWithClock(t, tr, 10*time.Second, lease.WithKeepAlive())
	ctx := lock.Context()
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Match: hasIFEQ, Times: 1 << 20,
		Error: "LOADING Redis is loading the dataset in memory"})
	clock.Advance(sm.RenewalDelay(lock.Duration(), lock.RemainingEstimate())) // the first renewal
	for retries := 0; ; retries++ {
		if retries > 200 {
			t.Fatal("the keep-alive never reached its deadline")
		}
		// The refused renewal re-arms the renewal timer for a retry (the
		// deadline timer is the other one).
		eventually(t, "the refused renewal rescheduled", func() bool { return coreOf(lock).Driver().ArmedTimers() == 2 })
		if ctx.Err() != nil {
			t.Fatalf("the context ended before the deadline: %v", context.Cause(ctx))
		}
		remaining := lock.RemainingEstimate()
		if retry := sm.RenewalRetryDelay(remaining); retry < remaining {
			clock.Advance(retry)
			continue
		}
		clock.Advance(remaining) // the deadline comes first, with no renewal in flight
		break
	}
	loss := lossOf(t, causeOf(t, ctx))
	if loss.Reason != lease.LossDeadline || !errors.Is(loss, lease.ErrDidNotRun) {
		t.Fatalf("loss reason %v, error %v; want LossDeadline carrying the last renewal's LOADING (rule DeadlineLossSaysWhy)", loss.Reason, loss.Err)
	}
	if errors.Is(loss, lease.ErrExpired) {
		t.Fatal("a lease with a running keep-alive did not simply expire: want a loss, not ErrExpired")
	}
}

// TestLockContext_EndsWithLossDeadlineInFlightWhenARenewalIsStalledAtTheDeadline:
// a keep-alive renewal stuck on a stalled socket when the lease deadline
// passes ends the context with LossDeadlineInFlight.
func caseLockContext_EndsWithLossDeadlineInFlightWhenARenewalIsStalledAtTheDeadline(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := f.locks(t, lease.WithIdleCheck(time.Hour))
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		ctx := lock.Context()
		session := f.sessionConn(t, lock)
		session.Stall(faultproxy.Both)
		clock.Advance(5 * time.Second) // the renewal is written into the stalled socket
		if err := session.WaitBuffered(ctxT(t), faultproxy.ToServer, 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(5 * time.Second) // past the deadline
		loss := lossOf(t, causeOf(t, ctx))
		if loss.Reason != lease.LossDeadlineInFlight {
			t.Fatalf("loss reason %v; want LossDeadlineInFlight", loss.Reason)
		}
	})
}

// TestLockContext_EndsWithLossRenewalUnknownWhenARenewalsOutcomeIsUnknown:
// a ResetExpiry whose reply never comes (its ctx ends after the server ran
// it) ends the context with LossRenewalUnknown, wrapping the renewal's
// error, which matches ErrOutcomeUnknown.
func caseLockContext_EndsWithLossRenewalUnknownWhenARenewalsOutcomeIsUnknown(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := f.locks(t, lease.WithIdleCheck(time.Hour))
		lock, err := locks.Acquire(ctxT(t), "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ctx := lock.Context()
		f.sessionConn(t, lock).Stall(faultproxy.ToClient)
		resetCtx, cancel := context.WithCancel(ctxT(t))
		reset := make(chan error, 1)
		go func() { _, err := lock.ResetExpiry(resetCtx, time.Minute); reset <- err }()
		waitEntry(t, f.srv, isExtendOf("k")) // the server has it; its reply is held
		for _, c := range f.proxy.Conns() {
			c.Stall(faultproxy.ToClient) // the fence runs; its answer is held for now
		}
		cancel()
		cause := causeOf(t, ctx) // ended at once, before the fence answered
		select {
		case err := <-reset:
			t.Fatalf("ResetExpiry returned before its fence answered: %v", err)
		default:
		}
		f.proxy.UnstallAll(faultproxy.Both)
		if err := <-reset; !errors.Is(err, lease.ErrOutcomeUnknown) || errors.Is(err, lease.ErrFencePending) {
			t.Fatalf("ResetExpiry = %v; want ErrOutcomeUnknown, once fenced", err)
		}
		loss := lossOf(t, cause)
		if loss.Reason != lease.LossRenewalUnknown || loss.Err == nil || !errors.Is(loss.Err, conn.ErrOutcomeUnknown) {
			t.Fatalf("loss reason %v, error %v; want LossRenewalUnknown wrapping an unknown outcome", loss.Reason, loss.Err)
		}
		if !errors.Is(cause, lease.ErrOutcomeUnknown) {
			t.Fatalf("cause %v does not match ErrOutcomeUnknown", cause)
		}
	})
}

// TestLockContext_CreatedAfterTheLeaseEndedIsAlreadyCancelledWithItsCause:
// a context first asked for after the lease ended comes back cancelled,
// with the cause it would have had.
func caseLockContext_CreatedAfterTheLeaseEndedIsAlreadyCancelledWithItsCause(t *testing.T, tr Transport) {
	t.Run("released", func(t *testing.T) {
		_, _, lock := acquireWithClock(t, tr, 10*time.Second)
		if out, err := lock.Release(ctxT(t)); out != lease.Released || err != nil {
			t.Fatalf("Release = %v, %v", out, err)
		}
		if ctx := lock.Context(); ctx.Err() == nil || context.Cause(ctx) != lease.ErrReleased {
			t.Fatalf("Context after Release: cause %v; want already cancelled with ErrReleased", context.Cause(ctx))
		}
	})
	t.Run("expired", func(t *testing.T) {
		_, clock, lock := acquireWithClock(t, tr, 10*time.Second)
		clock.Advance(estimateOf(10 * time.Second))
		if ctx := lock.Context(); ctx.Err() == nil || context.Cause(ctx) != lease.ErrExpired {
			t.Fatalf("Context after the estimate ran out: cause %v; want already cancelled with ErrExpired", context.Cause(ctx))
		}
	})
	t.Run("lost", func(t *testing.T) {
		srv, _, lock := acquireWithClock(t, tr, 10*time.Second)
		srv.Exec("SET", "k", "another-owner")
		if ok, err := lock.ResetExpiry(ctxT(t), 10*time.Second); ok || err != nil {
			t.Fatalf("ResetExpiry = %v, %v; want false", ok, err)
		}
		ctx := lock.Context()
		if ctx.Err() == nil {
			t.Fatal("Context after the loss is live")
		}
		if loss := lossOf(t, context.Cause(ctx)); loss.Reason != lease.LossRefused {
			t.Fatalf("loss reason %v; want LossRefused", loss.Reason)
		}
	})
}

// TestLockContext_ReturnsTheSameContextEveryTime: Context is created once;
// later calls, before and after the lease ended, return the same one.
func caseLockContext_ReturnsTheSameContextEveryTime(t *testing.T, tr Transport) {
	_, _, lock := acquireWithClock(t, tr, 10*time.Second)
	first := lock.Context()
	if again := lock.Context(); again != first {
		t.Fatal("a second Context call returned another context")
	}
	if _, err := lock.Release(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if again := lock.Context(); again != first {
		t.Fatal("Context after the release returned another context")
	}
}

// TestLockContext_KeepAliveStopDoesNotEndItAndTheLeaseThenExpiresAtItsEstimate:
// stopping a keep-alive leaves the lease held; the lock's context lives on
// and ends with ErrExpired when the estimate of the last confirmed renewal
// runs out.
func caseLockContext_KeepAliveStopDoesNotEndItAndTheLeaseThenExpiresAtItsEstimate(t *testing.T, tr Transport) {
	for _, c := range []struct {
		name         string
		contextFirst bool // Context asked for before the stop (and a renewal confirmed)
	}{
		{"context before the stop, after a renewal", true},
		{"context after the stop", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, clock, lock := acquireWithClock(t, tr, 10*time.Second)
			ka, err := lock.KeepAlive(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			var ctx context.Context
			if c.contextFirst {
				ctx = lock.Context()
				clock.Advance(sm.RenewalDelay(lock.Duration(), lock.RemainingEstimate()))
				eventually(t, "the renewal confirmed", func() bool { return renewedFresh(lock) })
			}
			ka.Stop()
			if !errors.Is(ka.Err(), lease.ErrKeepAliveStopped) {
				t.Fatalf("keep-alive Err %v; want ErrKeepAliveStopped", ka.Err())
			}
			if !c.contextFirst {
				ctx = lock.Context()
			}
			if ctx.Err() != nil || lock.State() != lease.StateHeld {
				t.Fatalf("after KeepAlive.Stop: state %v, lock context cause %v; want Held and live", lock.State(), context.Cause(ctx))
			}
			remaining := lock.RemainingEstimate()
			if remaining != estimateOf(10*time.Second) {
				t.Fatalf("remaining %v; want a full estimate %v (from the last confirmed send)", remaining, estimateOf(10*time.Second))
			}
			clock.Advance(remaining - time.Millisecond)
			if ctx.Err() != nil || lock.State() != lease.StateHeld {
				t.Fatalf("1ms before the estimate ran out: state %v, cause %v", lock.State(), context.Cause(ctx))
			}
			clock.Advance(time.Millisecond)
			if cause := causeOf(t, ctx); cause != lease.ErrExpired {
				t.Fatalf("cause %v; want ErrExpired", cause)
			}
		})
	}
}

func init() {
	register(
		Case{"LockContext_EndsWithErrReleasedOnRelease", caseLockContext_EndsWithErrReleasedOnRelease},
		Case{"LockContext_EndsWithErrExpiredAtTheEstimateWithoutKeepAlive", caseLockContext_EndsWithErrExpiredAtTheEstimateWithoutKeepAlive},
		Case{"LockContext_EndsWithLossRefusedWhenAnotherOwnerTookTheKey", caseLockContext_EndsWithLossRefusedWhenAnotherOwnerTookTheKey},
		Case{"LockContext_EndsWithLossDeadlineWhenNoRenewalIsConfirmedByTheDeadline", caseLockContext_EndsWithLossDeadlineWhenNoRenewalIsConfirmedByTheDeadline},
		Case{"LockContext_EndsWithLossDeadlineInFlightWhenARenewalIsStalledAtTheDeadline", caseLockContext_EndsWithLossDeadlineInFlightWhenARenewalIsStalledAtTheDeadline},
		Case{"LockContext_EndsWithLossRenewalUnknownWhenARenewalsOutcomeIsUnknown", caseLockContext_EndsWithLossRenewalUnknownWhenARenewalsOutcomeIsUnknown},
		Case{"LockContext_CreatedAfterTheLeaseEndedIsAlreadyCancelledWithItsCause", caseLockContext_CreatedAfterTheLeaseEndedIsAlreadyCancelledWithItsCause},
		Case{"LockContext_ReturnsTheSameContextEveryTime", caseLockContext_ReturnsTheSameContextEveryTime},
		Case{"LockContext_KeepAliveStopDoesNotEndItAndTheLeaseThenExpiresAtItsEstimate", caseLockContext_KeepAliveStopDoesNotEndItAndTheLeaseThenExpiresAtItsEstimate},
	)
}
