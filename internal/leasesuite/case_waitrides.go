package leasesuite

import (
	"context"
	"errors"
	"fmt"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"

	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// These tests hold rule WaitRidesOutTransportErrors: a waiting acquisition
// rides out a restart, a reset connection, a reply that proves nothing ran,
// and ends at once only on a refusal every later try would meet.

// TestWaitRidesOutTransportErrors_ARestartOnTheSamePortDoesNotEndTheWait:
// a private redis-server is restarted on its port while a keep-alive lock
// is held; a waiting Acquire on the same Locks, whose session nothing has
// read since the restart (rueidis' synchronous mode: the context has no
// Done channel; no idle PING), sends its first SET into the dead socket.
// The wait goes on and acquires, three restarts in a row, with push and
// without, and leaves no key behind.
func caseWaitRidesOutTransportErrors_ARestartOnTheSamePortDoesNotEndTheWait(t *testing.T, tr Transport) {
	r := realserver.StartPrivate(t)
	for _, mode := range []struct {
		name string
		opts []lease.Option
	}{{"push", nil}, {"without-push", []lease.Option{lease.WithoutPush()}}} {
		t.Run(mode.name, func(t *testing.T) {
			locks := newLocks(t, tr, clientOf([]string{r.Addr}, "", r.Password, false), append(mode.opts, lease.WithIdleCheck(time.Hour))...)
			ctx := context.Background()
			holder, err := locks.Acquire(ctx, "held", time.Minute, lease.WithKeepAlive())
			if err != nil {
				t.Fatal(err)
			}
			for round := range 3 {
				r.Stop(t)
				r.Start(t)
				lock, err := locks.Acquire(ctx, "job", 2*time.Second, lease.WithWait(3*time.Second))
				if err != nil {
					t.Fatalf("round %d: Acquire(WithWait(3s)) after a restart = %v; want the wait to ride it out", round, err)
				}
				if got := r.MustExec(t, "GET", "job"); got != bulk(wireOf(lock.Token())) {
					t.Fatalf("round %d: the key holds %q, not the lock's token", round, got)
				}
				if out, err := lock.Release(ctx); out != lease.Released || err != nil {
					t.Fatalf("round %d: Release = %v, %v", round, out, err)
				}
			}
			_ = holder.Close() // its key went with the first restart
			locks.Close()      // waits for every clean-up
			if n := r.MustExec(t, "DBSIZE"); n != ":0\r\n" {
				t.Fatalf("DBSIZE after Close = %q; want no key left", n)
			}
		})
	}
}

func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

func acquireAsync(ctx context.Context, locks *lease.Locks, key string, ttl time.Duration, opts ...lease.AcquireOption) <-chan acquired {
	done := make(chan acquired, 1)
	go func() {
		lock, err := locks.Acquire(ctx, key, ttl, opts...)
		done <- acquired{lock: lock, err: err}
	}()
	return done
}

// TestWaitRidesOutTransportErrors_ASetWhoseReplyWasLostIsSettledAndAcquired:
// the server runs the waiter's SET, its reply is dropped and the connection
// reset. The SET's socket is fenced, the key read on a fresh session finds
// the SET's token: the waiter holds the lock with that token, and no second
// SET was sent (every sim profile and the real server, through a fault
// proxy).
func caseWaitRidesOutTransportErrors_ASetWhoseReplyWasLostIsSettledAndAcquired(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := f.locks(t)
		ctx := ctxT(t)
		session := f.connOf(t, leaseinternal.Driver(locks).StandaloneSession())
		before := kills(f.target)
		f.srv.ResetLog()
		session.BlackHole(faultproxy.ToClient) // the server runs what it gets; its replies vanish
		result := acquireAsync(ctx, locks, "k", time.Minute, lease.WithWait(5*time.Second))
		set := waitEntry(t, f.srv, isCommand("SET", "k"))
		session.Reset()
		got := <-result
		if got.err != nil {
			t.Fatalf("Acquire after a lost SET reply = %v; want the wait to settle it and acquire", got.err)
		}
		if wireOf(got.lock.Token()) != set.Args[2] {
			t.Fatal("the lock's token is not the one the SET that ran wrote")
		}
		if n := countArgs(f.srv.Log(), "SET", "k", "NX"); n != 1 {
			t.Fatalf("%d SET NX of the key; want 1 (the uncertain one, settled, never sent again)", n)
		}
		if kills(f.target) <= before {
			t.Fatal("the SET's socket was not fenced before the key was read")
		}
		if out, err := got.lock.Release(ctx); out != lease.Released || err != nil {
			t.Fatalf("Release = %v, %v; want Released", out, err)
		}
	})
}

// TestWaitRidesOutTransportErrors_ASetThatNeverArrivedIsSettledAndTriedAgain:
// the waiter's SET is held in the proxy and the connection reset before it
// reaches the server. Settled (fence, read: no token of ours), the try left
// nothing, and the next try acquires with a fresh token. No key is left
// after the release.
func caseWaitRidesOutTransportErrors_ASetThatNeverArrivedIsSettledAndTriedAgain(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := f.locks(t)
		ctx := ctxT(t)
		session := f.connOf(t, leaseinternal.Driver(locks).StandaloneSession())
		before := kills(f.target)
		f.srv.ResetLog()
		session.Stall(faultproxy.ToServer)
		result := acquireAsync(ctx, locks, "k", time.Minute, lease.WithWait(5*time.Second))
		if err := session.WaitBuffered(ctx, faultproxy.ToServer, 1); err != nil {
			t.Fatalf("the SET never left the client: %v", err)
		}
		session.Reset() // the SET is dropped with the connection
		got := <-result
		if got.err != nil {
			t.Fatalf("Acquire after a SET lost on the way = %v; want the wait to go on and acquire", got.err)
		}
		sets := acquireTokens(f.srv.Log())
		if len(sets) != 1 || sets[0] != wireOf(got.lock.Token()) {
			t.Fatalf("the server ran %d SET NX; want exactly the second try's, with the lock's token", len(sets))
		}
		if kills(f.target) <= before {
			t.Fatal("the first SET's socket was not fenced before the key was read")
		}
		if out, err := got.lock.Release(ctx); out != lease.Released || err != nil {
			t.Fatalf("Release = %v, %v; want Released", out, err)
		}
		if got := f.srv.Exec("EXISTS", "k"); got != ":0\r\n" {
			t.Fatalf("EXISTS after the release = %q; want no key left", got)
		}
	})
}

// TestWaitRidesOutTransportErrors_AContendedTryWhoseReplyWasLostWaitsOn: the
// key is held by another owner; the waiter's refused SET loses its reply to
// a reset. Settled (the key holds the other token), the wait goes on and
// acquires once the other owner leaves, with push and without.
func caseWaitRidesOutTransportErrors_AContendedTryWhoseReplyWasLostWaitsOn(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		for _, opts := range [][]lease.Option{nil, {lease.WithoutPush()}} {
			locks := f.locks(t, opts...)
			ctx := ctxT(t)
			f.srv.Exec("SET", "k", "other", "PX", "60000")
			session := f.connOf(t, leaseinternal.Driver(locks).StandaloneSession())
			f.srv.ResetLog()
			session.BlackHole(faultproxy.ToClient)
			result := acquireAsync(ctx, locks, "k", time.Minute, lease.WithWait(5*time.Second), lease.WithRetryEvery(20*time.Millisecond))
			waitEntry(t, f.srv, isCommand("SET", "k"))
			session.Reset()
			waitEntry(t, f.srv, isCommand("GET", "k")) // the settling read, on a fresh session
			f.srv.Exec("DEL", "k")
			got := <-result
			if got.err != nil {
				t.Fatalf("Acquire = %v; want the wait to go on after the settled refusal and acquire", got.err)
			}
			if _, err := got.lock.Release(ctx); err != nil {
				t.Fatal(err)
			}
			locks.Close()
		}
	})
}

// TestWaitRidesOutTransportErrors_TheLeaseCountsFromTheFirstSend: a SET
// that ran, whose reply was lost, is settled by a fence whose reply is held
// 300 ms; the lock it becomes counts its lease from before that SET was
// sent, not from the read that settled it.
func caseWaitRidesOutTransportErrors_TheLeaseCountsFromTheFirstSend(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	ctx := ctxT(t)
	prime, err := locks.Acquire(ctx, "prime", time.Minute) // the session and its fencing probe
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prime.Release(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Command: "SET"})
	const fenceHeld = 300 * time.Millisecond
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "CLIENT", Delay: fenceHeld, Match: func(args []string) bool {
		return isKill(sim.Entry{Args: args})
	}})
	const ttl = 10 * time.Second
	lock, err := locks.Acquire(ctx, "k", ttl, lease.WithWait(5*time.Second))
	if err != nil {
		t.Fatalf("Acquire = %v; want the lost reply settled and the lock acquired", err)
	}
	defer lock.Close()
	if n := count(srv.Log(), "SET"); n != 2 { // prime's and k's
		t.Fatalf("%d SETs; want one of k (settled, not sent again)", n-1)
	}
	if left := lock.RemainingEstimate(); left > ttl-fenceHeld {
		t.Fatalf("RemainingEstimate %v right after the acquisition; want at most %v: counted from the SET's send, "+
			"before the %v the fence took", left, ttl-fenceHeld, fenceHeld)
	}
}

// TestWaitRidesOutTransportErrors_ASettlingSlowerThanTheLeaseIsNotHandedOut:
// the settling read finds the SET's token only after that SET's lease
// could have expired (its fence's reply held longer than the lease): that
// lock is never handed out (acquired too late, cleaned up), and the wait
// goes on to acquire with a fresh token.
func caseWaitRidesOutTransportErrors_ASettlingSlowerThanTheLeaseIsNotHandedOut(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	ctx := ctxT(t)
	prime, err := locks.Acquire(ctx, "prime", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prime.Release(ctx); err != nil {
		t.Fatal(err)
	}
	srv.ResetLog()
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Command: "SET"})
	const ttl = 300 * time.Millisecond
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "CLIENT", Delay: 2 * ttl, Match: func(args []string) bool {
		return isKill(sim.Entry{Args: args})
	}})
	lock, err := locks.Acquire(ctx, "k", ttl, lease.WithWait(5*time.Second), lease.WithRetryEvery(20*time.Millisecond))
	if err != nil {
		t.Fatalf("Acquire = %v; want the too-late settled try cleaned up and the wait to acquire", err)
	}
	defer lock.Close()
	tokens := acquireTokens(srv.Log())
	if len(tokens) < 2 || tokens[0] == wireOf(lock.Token()) {
		t.Fatalf("%d SETs, the lock's token the first's: %v; want the first try (settled too late) never handed out",
			len(tokens), len(tokens) > 0 && tokens[0] == wireOf(lock.Token()))
	}
}

// TestWaitRidesOutTransportErrors_ADidNotRunReplyIsTriedAgain: LOADING (a
// restarted server reading its data) proves the SET did not run; the wait
// goes on and acquires.
func caseWaitRidesOutTransportErrors_ADidNotRunReplyIsTriedAgain(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis70)
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Times: 2, Error: "LOADING Redis is loading the dataset in memory"})
	lock, err := locks.Acquire(ctxT(t), "k", time.Minute, lease.WithWait(5*time.Second), lease.WithRetryEvery(10*time.Millisecond))
	if err != nil {
		t.Fatalf("Acquire after LOADING replies = %v; want the wait to go on and acquire", err)
	}
	defer lock.Close()
	if n := count(srv.Log(), "SET"); n != 3 {
		t.Fatalf("%d SETs; want 3 (two refused with LOADING, then the one that acquired)", n)
	}
}

// TestWaitRidesOutTransportErrors_ADefiniteRefusalEndsTheWaitAtOnce: a server
// error every later try would meet too (NOPERM, WRONGTYPE) ends even an
// hour's wait after its one SET, with that error.
func caseWaitRidesOutTransportErrors_ADefiniteRefusalEndsTheWaitAtOnce(t *testing.T, tr Transport) {
	for _, reply := range []string{"NOPERM this user has no permissions to run the 'set' command",
		"WRONGTYPE Operation against a key holding the wrong kind of value"} {
		srv, locks := managedSim(t, tr, sim.Redis70)
		srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Error: reply})
		_, err := locks.Acquire(ctxT(t), "k", time.Minute, lease.WithWait(time.Hour))
		if !errors.Is(err, lease.ErrServerReply) || errors.Is(err, lease.ErrDidNotRun) {
			t.Fatalf("Acquire refused with %q = %v; want that server reply at once", reply, err)
		}
		if n := count(srv.Log(), "SET"); n != 1 {
			t.Fatalf("%d SETs after %q; want 1", n, reply)
		}
	}
}

// TestWaitRidesOutTransportErrors_TheBudgetEndsWithTheLastError: while the
// server cannot be reached (every new connection refused: no session can
// open), a waiting acquisition keeps trying until its budget is spent, then
// returns the last try's error; WithWaitUntilDone until its ctx ends, with
// the ctx's cause.
func caseWaitRidesOutTransportErrors_TheBudgetEndsWithTheLastError(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := newLocks(t, tr, clientOf([]string{f.proxy.Addr()}, "", f.password, false))
		f.proxy.Refuse(true)
		defer f.proxy.Refuse(false)
		const budget = 300 * time.Millisecond
		start := time.Now()
		_, err := locks.Acquire(ctxT(t), "k", time.Minute, lease.WithWait(budget))
		if waited := time.Since(start); waited < budget || !errors.Is(err, lease.ErrNotSubmitted) {
			t.Fatalf("Acquire(WithWait(%v)) with the server unreachable = %v after %v; want not submitted, "+
				"once the budget is spent", budget, err, waited)
		}
		start = time.Now() // before the ctx's deadline starts counting
		ctx, cancel := context.WithTimeout(ctxT(t), budget)
		defer cancel()
		_, err = locks.Acquire(ctx, "k", time.Minute, lease.WithWaitUntilDone())
		if waited := time.Since(start); waited < budget || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire(WithWaitUntilDone) with the server unreachable = %v after %v; want the ctx's cause "+
				"once it ends", err, waited)
		}
		f.proxy.Refuse(false)
		lock, err := locks.Acquire(ctxT(t), "k", time.Minute, lease.WithWait(5*time.Second))
		if err != nil {
			t.Fatalf("Acquire once the server is reachable again = %v", err)
		}
		_ = lock.Close()
	})
}

func init() {
	register(
		Case{"WaitRidesOutTransportErrors_ARestartOnTheSamePortDoesNotEndTheWait", caseWaitRidesOutTransportErrors_ARestartOnTheSamePortDoesNotEndTheWait},
		Case{"WaitRidesOutTransportErrors_ASetWhoseReplyWasLostIsSettledAndAcquired", caseWaitRidesOutTransportErrors_ASetWhoseReplyWasLostIsSettledAndAcquired},
		Case{"WaitRidesOutTransportErrors_ASetThatNeverArrivedIsSettledAndTriedAgain", caseWaitRidesOutTransportErrors_ASetThatNeverArrivedIsSettledAndTriedAgain},
		Case{"WaitRidesOutTransportErrors_AContendedTryWhoseReplyWasLostWaitsOn", caseWaitRidesOutTransportErrors_AContendedTryWhoseReplyWasLostWaitsOn},
		Case{"WaitRidesOutTransportErrors_TheLeaseCountsFromTheFirstSend", caseWaitRidesOutTransportErrors_TheLeaseCountsFromTheFirstSend},
		Case{"WaitRidesOutTransportErrors_ASettlingSlowerThanTheLeaseIsNotHandedOut", caseWaitRidesOutTransportErrors_ASettlingSlowerThanTheLeaseIsNotHandedOut},
		Case{"WaitRidesOutTransportErrors_ADidNotRunReplyIsTriedAgain", caseWaitRidesOutTransportErrors_ADidNotRunReplyIsTriedAgain},
		Case{"WaitRidesOutTransportErrors_ADefiniteRefusalEndsTheWaitAtOnce", caseWaitRidesOutTransportErrors_ADefiniteRefusalEndsTheWaitAtOnce},
		Case{"WaitRidesOutTransportErrors_TheBudgetEndsWithTheLastError", caseWaitRidesOutTransportErrors_TheBudgetEndsWithTheLastError},
	)
}
