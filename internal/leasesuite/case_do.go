package leasesuite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// expiresByItself fails t unless key's lease on the server only runs down
// from now on — its PTTL never grows (nothing renews it) — and the key is
// gone within ttl (with slack for a loaded machine).
func expiresByItself(t *testing.T, tg *target, key string, ttl time.Duration) {
	t.Helper()
	last := pttlOf(tg, key)
	first, start := last, time.Now()
	defer func() {
		t.Logf("PTTL %d ms when Do returned; the key ran down and was gone %v later", first, time.Since(start))
	}()
	deadline := start.Add(ttl + 5*time.Second)
	for last != -2 {
		if time.Now().After(deadline) {
			t.Fatalf("the key is still there (PTTL %d ms) %v after Do returned; want its lease to end by itself", last, ttl+5*time.Second)
		}
		time.Sleep(20 * time.Millisecond)
		now := pttlOf(tg, key)
		if now > last {
			t.Fatalf("the key's PTTL grew from %d to %d ms after Do returned: something still renews the lock", last, now)
		}
		last = now
	}
}

// TestDoRunsUnderTheLock_NoLiveHandleAfterAReleaseNotSent: the work moves
// the Locks to a fresh session (its first command a plain acquisition of
// another key), whose permission probe — sent before Do's release, the
// session's first release — is then reset in a fault proxy. The release
// was not sent: Do's *WorkError says so (ErrNotSubmitted, never
// ErrOutcomeUnknown, no loss), and Do leaves no live handle behind: no
// renewal after it returned, the key's PTTL only runs down and the key
// expires by itself (a sim node on real time and the real server).
func caseDoRunsUnderTheLock_NoLiveHandleAfterAReleaseNotSent(t *testing.T, tr Transport) {
	const ttl = 4 * time.Second // renewals every 2 s: none before the release
	forRedis84AndRealFaulty(t, tr, true, func(t *testing.T, f *faulty) {
		locks := f.locks(t, lease.WithIdleCheck(time.Hour))
		ctx := ctxT(t)
		var other *lease.Lock
		err := locks.Do(ctx, "do:probe", ttl, func(work context.Context) error {
			leaseinternal.Driver(locks).Transport().RetireAll()
			var err error
			if other, err = locks.Acquire(work, "do:other", time.Minute); err != nil {
				return err // on a fresh session, which has not probed
			}
			fresh := f.connOf(t, leaseinternal.Driver(locks).StandaloneSession())
			fresh.Stall(faultproxy.ToServer)
			go func() {
				if fresh.WaitBuffered(ctx, faultproxy.ToServer, 1) == nil {
					fresh.Reset() // the probe before the release
				}
			}()
			return nil
		})
		if other == nil {
			t.Fatalf("Do = %v; the work could not move to a fresh session", err)
		}
		defer other.Close()
		var workErr *lease.WorkError
		switch {
		case !errors.As(err, &workErr) || workErr.Release == nil:
			t.Fatalf("Do = %v; want a *WorkError with the release's error", err)
		case errors.Is(err, lease.ErrOutcomeUnknown) || !errors.Is(err, lease.ErrNotSubmitted):
			t.Fatalf("Do = %v; want the release not sent (ErrNotSubmitted), never outcome unknown", err)
		case errors.Is(err, lease.ErrLostDuringWork) || workErr.Work != nil:
			t.Fatalf("Do = %v; want only the release's error", err)
		}
		expiresByItself(t, f.target, "do:probe", ttl)
	})
}

// TestDoRunsUnderTheLock_NoLiveHandleAfterARefusedRelease: the server
// refuses Do's release (NOPERM): the lock is still held, and Do, which
// returns the refusal, leaves no live handle behind: its keep-alive is
// stopped, the key's PTTL only runs down and the key expires by itself.
func caseDoRunsUnderTheLock_NoLiveHandleAfterARefusedRelease(t *testing.T, tr Transport) {
	const ttl = 2 * time.Second
	srv := startSim(t, sim.Config{Profile: sim.Redis84}) // real time: the key expires
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, false))
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "DELEX", Error: "NOPERM release denied", Times: 1})
	err := locks.Do(ctxT(t), "do:refused", ttl, func(context.Context) error { return nil })
	if !errors.Is(err, lease.ErrServerReply) || errors.Is(err, lease.ErrLostDuringWork) {
		t.Fatalf("Do = %v; want the release's refusal", err)
	}
	expiresByItself(t, &target{tr: tr, profile: sim.Redis84, srv: srv, password: simPassword}, "do:refused", ttl)
}

func init() {
	register(
		Case{"DoRunsUnderTheLock_NoLiveHandleAfterAReleaseNotSent", caseDoRunsUnderTheLock_NoLiveHandleAfterAReleaseNotSent},
		Case{"DoRunsUnderTheLock_NoLiveHandleAfterARefusedRelease", caseDoRunsUnderTheLock_NoLiveHandleAfterARefusedRelease},
	)
}
