package leasesuite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/lease"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// These tests hold the transport-safety rules over real sockets: real
// rueidis, a fault proxy, and every sim profile plus the real redis-server
// 7.0. Each is named after its rule in docs/rules.md.

// TestUncertainLocalClose_AReleaseWhoseSocketIsClosedLocallyIsUncertain: a
// Release whose delete ran, cut off by Locks.Close closing its busy socket,
// is never "not submitted": the handle is not Held and the delete is never
// sent twice.
func caseUncertainLocalClose_AReleaseWhoseSocketIsClosedLocallyIsUncertain(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		loadScripts(f.target)
		locks := f.locks(t)
		ctx := ctxT(t)
		lock, err := locks.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		token := wireOf(lock.Token())
		f.sessionConn(t, lock).Stall(faultproxy.ToClient) // the server runs the delete; its reply is held
		released := make(chan error, 1)
		go func() { _, err := lock.Release(ctx); released <- err }()
		waitEntry(t, f.srv, isDelete(token))
		closed := make(chan struct{})
		go func() { locks.Close(); close(closed) }()
		err = <-released
		if errors.Is(err, conn.ErrNotSubmitted) || !errors.Is(err, conn.ErrOutcomeUnknown) {
			t.Fatalf("Release cut off by Locks.Close = %v; want uncertain, never not submitted", err)
		}
		if st := lock.State(); st == lease.StateHeld {
			t.Fatal("the handle stayed Held although its delete ran")
		}
		if got := f.srv.Exec("SET", "k", "outsider", "NX", "PX", "60000"); got != "+OK\r\n" {
			t.Fatalf("outsider SET NX = %q; the delete had run, the key should be free", got)
		}
		f.proxy.UnstallAll(faultproxy.Both)
		<-closed
		if n := deletesOf(f.target, token); n != 1 {
			t.Fatalf("%d deletes of the token ran; want exactly 1 (never re-sent)", n)
		}
	})
}

// TestUncertainLocalClose_LocksCloseDuringAReleaseOnAPausedServer: the
// server is paused (no byte reaches it) while a Release is in flight and
// Locks.Close runs. Release is uncertain, the handle is not Held, and
// Release and Locks.Close return only once the fence of that socket
// answered, after the server resumes (rule FenceBeforeReturn).
func caseUncertainLocalClose_LocksCloseDuringAReleaseOnAPausedServer(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		loadScripts(f.target)
		locks := f.locks(t)
		ctx := ctxT(t)
		lock, err := locks.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		session := f.sessionConn(t, lock)
		f.proxy.StallAll(faultproxy.ToServer) // the server is
		released := make(chan error, 1)
		releaseCtx := ctxFor(t, 3*time.Second) // longer than the close's 1s drain: Release's outcome is unknown then
		go func() { _, err := lock.Release(releaseCtx); released <- err }()
		if err := session.WaitBuffered(ctx, faultproxy.ToServer, 1); err != nil {
			t.Fatalf("the delete never left the client: %v", err)
		}
		closed := make(chan struct{})
		go func() { locks.Close(); close(closed) }()
		waitDone(t, lock.Context()) // Locks.Close closed the socket under the delete: its outcome is unknown
		select {
		case err := <-released:
			t.Fatalf("Release returned before the fence of its socket could answer: %v", err)
		case <-closed:
			t.Fatal("Locks.Close returned before the fence of the released socket could answer")
		case <-time.After(100 * time.Millisecond): // a negative check: the fence cannot reach the server
		}
		before := kills(f.target)
		f.proxy.UnstallAll(faultproxy.Both) // the server resumes
		err = <-released
		if errors.Is(err, conn.ErrNotSubmitted) || !errors.Is(err, conn.ErrOutcomeUnknown) || errors.Is(err, lease.ErrFencePending) ||
			lock.State() == lease.StateHeld {
			t.Fatalf("Release during Locks.Close on a paused server = %v (state %v); want uncertain, fenced, not Held", err, lock.State())
		}
		<-closed
		if kills(f.target) <= before {
			t.Fatal("Locks.Close returned, but no fence ran")
		}
		if n := deletesOf(f.target, wireOf(lock.Token())); n > 1 {
			t.Fatalf("%d deletes ran; want at most 1", n)
		}
	})
}

// TestDriftMargin_TheKeepAliveContextEndsBeforeTheServersLease: renewals
// that never reach the server; the keep-alive context must end while the
// server still holds the key by at least the drift margin (less the time it
// takes to ask). Real time, real sockets, real expiry.
func caseDriftMargin_TheKeepAliveContextEndsBeforeTheServersLease(t *testing.T, tr Transport) {
	const ttl, floor = time.Second, 100 * time.Millisecond // margin: 100ms + 10% of 1s = 200ms
	forEachRealTimeFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := f.locks(t, lease.WithDriftMargin(0.1, floor))
		lock, err := locks.Acquire(ctxT(t), "k", ttl, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		f.sessionConn(t, lock).Stall(faultproxy.ToServer) // renewals never arrive
		ka := lock.Context()
		waitDone(t, ka)
		var pttl int64
		if _, err := fmtSscanInt(f.srv.Exec("PTTL", "k"), &pttl); err != nil || pttl < int64(floor/time.Millisecond) {
			t.Fatalf("when the keep-alive ended the server's PTTL was %d ms (%v); want ≥ %v left", pttl, err, floor)
		}
		if !errors.Is(context.Cause(ka), lease.ErrOwnershipLost) {
			t.Fatalf("cause %v; want ErrOwnershipLost", context.Cause(ka))
		}
	})
}

// TestFenceBeforeReturn_CloseOfALostHandleWaitsForItsFence: the lease
// deadline passes with a renewal stuck on its socket; the handle is given
// up and its socket fenced. Close must not return before the kill answered,
// and the stuck renewal never runs after it.
func caseFenceBeforeReturn_CloseOfALostHandleWaitsForItsFence(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		// The stalled command must be the renewal, not an idle check's PING:
		// none by time, and no watcher whose end on the stalled proxy makes
		// the session suspect.
		locks := f.locks(t, lease.WithIdleCheck(lease.MaxTTL), lease.WithoutPush())
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		if f.real && f.tr.FenceOnOwnConn {
			t.Skip("no way to hold the fence's answer: a real server has no reply gate, and this transport sends each fence on a connection it opens for it, which no proxy stall set up before holds")
		}
		before := kills(f.target)
		session := f.sessionConn(t, lock)
		session.Stall(faultproxy.Both)
		for _, c := range f.proxy.Conns() {
			if c != session {
				c.Stall(faultproxy.ToClient) // the fence runs; its answer is held
			}
		}
		answer := make(chan struct{}) // on a sim node the kill's reply is held too, on whatever connection carries it
		defer func() {
			select {
			case <-answer:
			default:
				close(answer)
			}
		}()
		if srv, ok := f.srv.(*sim.Server); ok {
			srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "CLIENT", Gate: answer,
				Match: func(args []string) bool { return isKill(sim.Entry{Args: args}) }})
		}
		clock.Advance(5 * time.Second)
		if err := session.WaitBuffered(ctxT(t), faultproxy.ToServer, 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(5 * time.Second) // past the lease deadline
		waitDone(t, lock.Context())
		waitFenced(t, f.target, before)
		closed := make(chan error, 1)
		go func() { closed <- lock.Close() }()
		select {
		case <-closed:
			t.Fatal("Close returned before the fence answered")
		case <-time.After(100 * time.Millisecond): // a negative check: the kill's reply is held
		}
		f.proxy.UnstallAll(faultproxy.Both)
		close(answer)
		if err := <-closed; err != nil {
			t.Fatalf("Close = %v", err)
		}
		if !f.real { // MONITOR shows no CLIENT KILL to order against
			kill := seqOf(f.srv.Log(), isKill)
			for _, e := range f.srv.Log() {
				if isRenewal("k")(e) && e.Seq > kill {
					t.Fatalf("a renewal ran after the fence answered: %v", e.Args)
				}
			}
		}
		if lock.State() != lease.StateLost {
			t.Fatalf("state %v; want Lost", lock.State())
		}
	})
}

// TestLeaseDurationBounds_DurationsNearTheMaximumAreRefusedBeforeSending:
// no arithmetic on a lease may overflow: durations beyond MaxTTL are
// refused before anything is sent, and MaxTTL itself works end to end.
func caseLeaseDurationBounds_DurationsNearTheMaximumAreRefusedBeforeSending(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t)
		ctx := ctxT(t)
		tg.srv.ResetLog()
		for _, ttl := range []time.Duration{1<<63 - 1, lease.MaxTTL + time.Millisecond} {
			if _, err := locks.Acquire(ctx, "k", ttl, lease.WithKeepAlive()); !errors.Is(err, lease.ErrInvalidTTL) {
				t.Fatalf("Acquire(%v) = %v; want ErrInvalidTTL", ttl, err)
			}
			if _, err := locks.TryTake(ctx, "k", lease.NewToken(), ttl); !errors.Is(err, lease.ErrInvalidTTL) {
				t.Fatalf("TryTake(%v) = %v; want ErrInvalidTTL", ttl, err)
			}
		}
		if got := lockCommands(tg.srv.Log()); len(got) != 0 {
			t.Fatalf("refused durations sent %v", got)
		}
		lock, err := locks.Acquire(ctx, "k", lease.MaxTTL, lease.WithKeepAlive())
		if err != nil {
			t.Fatalf("Acquire(MaxTTL) = %v", err)
		}
		if lock.Duration() != lease.MaxTTL || lock.RemainingEstimate() <= 0 || lock.RemainingEstimate() > lease.MaxTTL {
			t.Fatalf("Duration %v, remaining %v; want MaxTTL and a positive estimate", lock.Duration(), lock.RemainingEstimate())
		}
		if ok, err := lock.ResetExpiry(ctx, 1<<63-1); ok || !errors.Is(err, lease.ErrInvalidTTL) {
			t.Fatalf("ResetExpiry(max) = %v, %v; want ErrInvalidTTL", ok, err)
		}
		if err := lock.Close(); err != nil || tg.srv.Exec("EXISTS", "k") != ":0\r\n" {
			t.Fatalf("Close = %v; the key must be gone", err)
		}
	})
}

// TestNotHeldPastTheEstimate_ALockWhoseEstimateRanOutIsNotHeld: with no
// keep-alive, a handle whose local estimate reached 0 is not Held, and a
// later Release sends nothing.
func caseNotHeldPastTheEstimate_ALockWhoseEstimateRanOutIsNotHeld(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t)
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(estimateOf(10 * time.Second))
		if st := lock.State(); st == lease.StateHeld || lock.RemainingEstimate() != 0 {
			t.Fatalf("state %v, remaining %v once the estimate ran out; want not Held", st, lock.RemainingEstimate())
		}
		tg.srv.ResetLog()
		if out, err := lock.Release(ctxT(t)); out != lease.NotOwned || err != nil {
			t.Fatalf("Release = %v, %v; want NotOwned", out, err)
		}
		if got := lockCommands(tg.srv.Log()); len(got) != 0 {
			t.Fatalf("a release of an expired handle sent %v", got)
		}
	})
}

// TestBoundedByContext_ReleaseReturnsWhenItsContextEnds: the server is
// paused (every connection, the fence's too, stalled on its way to it);
// Release with a 200ms ctx does not return before its fence has had its
// chance (rule FenceBeforeReturn), but returns by FenceTimeout after its
// ctx's end (the bug took 10s), says the fence did not answer, and the
// lock is Lost. One sim profile and the real server: each run takes
// FenceTimeout.
func caseBoundedByContext_ReleaseReturnsWhenItsContextEnds(t *testing.T, tr Transport) {
	forRedis84AndRealFaulty(t, tr, true, func(t *testing.T, f *faulty) {
		locks := f.locks(t)
		lock, err := locks.Acquire(ctxT(t), "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		f.proxy.StallAll(faultproxy.ToServer)
		const wait = 200 * time.Millisecond
		start := time.Now()
		_, err = lock.Release(ctxFor(t, wait))
		took := time.Since(start)
		if took > wait+lease.FenceTimeout+closeSlack {
			t.Fatalf("Release with a 200ms ctx took %v; want it bounded by the ctx plus FenceTimeout", took)
		}
		if !errors.Is(err, lease.ErrFencePending) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, conn.ErrOutcomeUnknown) {
			t.Fatalf("Release = %v; want the deadline, fence not answered, outcome unknown", err)
		}
		if lock.State() == lease.StateHeld {
			t.Fatal("the lock is Held although its delete may run")
		}
		if lock.State() != lease.StateLost {
			t.Fatalf("state %v once the fence gave up; want Lost", lock.State())
		}
		f.proxy.UnstallAll(faultproxy.Both)
		locks.Close() // returns: the fence gave up within its bound, nothing waits any more
	})
}

// TestSurvivesConnectionReset_AResetDoesNotLoseAHealthyLock: acquired with
// context.Background() (rueidis' synchronous path), the session's socket is
// reset while idle. The next renewal fails on it; the lock recovers on a
// fresh session and its keep-alive context stays live.
func caseSurvivesConnectionReset_AResetDoesNotLoseAHealthyLock(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := f.locks(t)
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		lock, err := locks.Acquire(context.Background(), "k", 10*time.Second, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		session := f.sessionConn(t, lock)
		session.Reset()
		<-session.Done()
		clock.Advance(5 * time.Second)
		eventually(t, "the lock renewed on a fresh session", func() bool {
			return lock.State() == lease.StateHeld && renewedFresh(lock)
		})
		if err := lock.Context().Err(); err != nil {
			t.Fatalf("keep-alive ended: %v", context.Cause(lock.Context()))
		}
		if owner := f.srv.Exec("GET", "k"); !strings.Contains(owner, wireOf(lock.Token())) {
			t.Fatalf("GET k = %q; want our token", owner)
		}
	})
}

// forEachRealTimeFaultyServer is forEachFaultyServer with sim nodes on real
// time (their keys expire by the wall clock), for tests of real expiry.
func forEachRealTimeFaultyServer(t *testing.T, tr Transport, fn func(t *testing.T, f *faulty)) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			srv := startSim(t, sim.Config{Profile: profile, History: true})
			p, err := faultproxy.Start(srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			fn(t, &faulty{target: &target{tr: tr, profile: profile, srv: srv, password: simPassword}, proxy: p})
		})
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

// TestAbandonedAcquisitionIsCleanedUp_AnUncertainSetsSocketIsFencedFirst:
// a socket reset after the SET ran but before its reply was read leaves
// the acquisition uncertain. Its clean-up must fence that socket before it
// reads and deletes the key (a SET still on its way could otherwise land
// after the clean-up judged the key), so the lock, made once the reply is
// in, must know which session carried its SET.
func caseAbandonedAcquisitionIsCleanedUp_AnUncertainSetsSocketIsFencedFirst(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := f.locks(t)
		ctx := ctxT(t)
		c := f.connOf(t, leaseinternal.Driver(locks).StandaloneSession())
		c.Stall(faultproxy.ToClient) // the SET runs; its reply is held
		before := kills(f.target)
		type outcome struct {
			a   lease.Attempt
			err error
		}
		acquired := make(chan outcome, 1)
		go func() { a, err := locks.TryAcquire(ctx, "k", time.Minute); acquired <- outcome{a, err} }()
		waitEntry(t, f.srv, isCommand("SET", "k"))
		c.Reset() // the socket dies with the reply unread
		got := <-acquired
		if got.a.Acquired() || !errors.Is(got.err, conn.ErrOutcomeUnknown) {
			t.Fatalf("TryAcquire on a reset socket = %v, %v; want not acquired, outcome unknown", got.a.Acquired(), got.err)
		}
		leaseinternal.Driver(locks).WaitIdle() // the clean-up has its answer
		if kills(f.target) <= before {
			t.Fatal("the clean-up of an uncertain acquisition did not fence the socket that carried its SET")
		}
		if !f.real {
			kill := waitEntry(t, f.srv, isKill)
			if kill.Args[5] != c.UpstreamLocalAddr() {
				t.Fatalf("fence %v; want it to name the SET's connection %s", kill.Args, c.UpstreamLocalAddr())
			}
		}
		if got := f.srv.Exec("EXISTS", "k"); got != ":0\r\n" {
			t.Fatalf("orphan lock left behind: EXISTS = %q", got)
		}
	})
}

func init() {
	register(
		Case{"UncertainLocalClose_AReleaseWhoseSocketIsClosedLocallyIsUncertain", caseUncertainLocalClose_AReleaseWhoseSocketIsClosedLocallyIsUncertain},
		Case{"UncertainLocalClose_LocksCloseDuringAReleaseOnAPausedServer", caseUncertainLocalClose_LocksCloseDuringAReleaseOnAPausedServer},
		Case{"DriftMargin_TheKeepAliveContextEndsBeforeTheServersLease", caseDriftMargin_TheKeepAliveContextEndsBeforeTheServersLease},
		Case{"FenceBeforeReturn_CloseOfALostHandleWaitsForItsFence", caseFenceBeforeReturn_CloseOfALostHandleWaitsForItsFence},
		Case{"LeaseDurationBounds_DurationsNearTheMaximumAreRefusedBeforeSending", caseLeaseDurationBounds_DurationsNearTheMaximumAreRefusedBeforeSending},
		Case{"NotHeldPastTheEstimate_ALockWhoseEstimateRanOutIsNotHeld", caseNotHeldPastTheEstimate_ALockWhoseEstimateRanOutIsNotHeld},
		Case{"BoundedByContext_ReleaseReturnsWhenItsContextEnds", caseBoundedByContext_ReleaseReturnsWhenItsContextEnds},
		Case{"SurvivesConnectionReset_AResetDoesNotLoseAHealthyLock", caseSurvivesConnectionReset_AResetDoesNotLoseAHealthyLock},
		Case{"AbandonedAcquisitionIsCleanedUp_AnUncertainSetsSocketIsFencedFirst", caseAbandonedAcquisitionIsCleanedUp_AnUncertainSetsSocketIsFencedFirst},
	)
}
