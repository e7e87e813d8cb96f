package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/sim"
)

// didNotRunReplies are the replies of a node that cannot serve now, as the
// servers word them.
var didNotRunReplies = []string{
	"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
	"LOADING Redis is loading the dataset in memory",
	"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
}

// isCachingYes matches the watcher's CLIENT CACHING YES.
func isCachingYes(args []string) bool {
	return len(args) == 3 && strings.EqualFold(args[1], "CACHING")
}

// readRetryPending reports whether a holders' read of wireKey failed and
// is due again after pushCheckRetry.
func readRetryPending(locks *lease.Locks, wireKey string) bool {
	return leaseinternal.Driver(locks).PushKey(wireKey).RetryPending
}

// wantReadRefused fails unless lock ended with LossReadRefused.
func wantReadRefused(t *testing.T, lock *lease.Lock) {
	t.Helper()
	var loss *lease.LossError
	if cause := context.Cause(lock.Context()); !errors.As(cause, &loss) || loss.Reason != lease.LossReadRefused {
		t.Fatalf("%s: cause %v; want LossReadRefused", lock.Key(), cause)
	}
}

// TestPushWatcherDropWakes_ADidNotRunReplyToCachingRereadsEveryKey: a
// holder's key and a waiter's key are tracked on the watcher when another
// read there gets BUSY, LOADING or MASTERDOWN for its CLIENT CACHING YES,
// which drops the watcher: both keys are read again on a fresh one, so a
// third party's overwrite of the holder's key still ends the holder at
// once, and a release of the waiter's key still wakes the waiter (retry
// interval a minute; lease 30 s, so neither a renewal nor the safety net
// can stand in within the test's 10 s).
func casePushWatcherDropWakes_ADidNotRunReplyToCachingRereadsEveryKey(t *testing.T, tr Transport) {
	for _, reply := range didNotRunReplies {
		code, _, _ := strings.Cut(reply, " ")
		t.Run(code, func(t *testing.T) {
			srv := startSim(t, sim.Config{Profile: sim.Valkey90})
			locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
			ctx := ctxT(t)
			holder, err := locks.Acquire(ctx, "push:drop:held", 30*time.Second, lease.WithKeepAlive())
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			srv.Exec("SET", "push:drop:wait", "someone-else", "PX", "60000")
			got := make(chan acquired, 1)
			go func() {
				lock, err := locks.Acquire(ctx, "push:drop:wait", 30*time.Second, lease.WithWaitUntilDone(),
					lease.WithRetryEvery(time.Minute))
				got <- acquired{lock: lock, err: err, at: time.Now()}
			}()
			eventually(t, "both keys tracked", func() bool {
				return holderArmed(locks, "push:drop:held") && parkedWaiters(locks, "push:drop:wait") == 1
			})
			fired := make(chan sim.FaultRecord, 1)
			srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "CLIENT", Error: reply, Match: isCachingYes, Fired: fired})
			probe, err := locks.Acquire(ctx, "push:drop:probe", 30*time.Second, lease.WithKeepAlive()) // its read meets the fault
			if err != nil {
				t.Fatal(err)
			}
			defer probe.Close()
			select {
			case <-fired:
			case <-ctx.Done():
				t.Fatal("no read met the fault")
			}
			// The fault fires before its reply is written: the watcher is
			// dropped once the probe's failed read has been settled.
			eventually(t, "the probe's read failed", func() bool { return readRetryPending(locks, "push:drop:probe") })
			start := time.Now()
			srv.Exec("SET", "push:drop:held", "thief", "PX", "60000")
			waitDone(t, holder.Context())
			wantReadRefused(t, holder)
			t.Logf("%s: the holder learned of the overwrite after %v", code, time.Since(start))
			start = time.Now()
			srv.Exec("DEL", "push:drop:wait")
			r := <-got
			if r.err != nil {
				t.Fatalf("the waiter: %v; want the lock soon after the release", r.err)
			}
			defer r.lock.Close()
			t.Logf("%s: the waiter took the key %v after its release", code, r.at.Sub(start))
			eventually(t, "the probe's key tracked again", func() bool { return holderArmed(locks, "push:drop:probe") })
		})
	}
}

// TestPushSurvivesWatcherReconnect_AWaitersFailedReadIsTriedAgainSoon: a
// waiter (retry interval a minute) whose own tracked read fails — its
// CLIENT CACHING YES answered BUSY, LOADING or MASTERDOWN (the watcher is
// dropped), or its GET — tries again within pushCheckRetry rather than a
// minute later, so it tracks the key and is woken by the release.
func casePushSurvivesWatcherReconnect_AWaitersFailedReadIsTriedAgainSoon(t *testing.T, tr Transport) {
	for _, command := range []string{"CLIENT", "GET"} {
		for _, reply := range didNotRunReplies {
			code, _, _ := strings.Cut(reply, " ")
			t.Run(command+"/"+code, func(t *testing.T) {
				srv := startSim(t, sim.Config{Profile: sim.Redis70})
				locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
				ctx := ctxT(t)
				srv.Exec("SET", "push:retry:wait", "someone-else", "PX", "60000")
				fired := make(chan sim.FaultRecord, 1)
				f := sim.Fault{Kind: sim.FailWith, Command: command, Error: reply, Fired: fired}
				if command == "CLIENT" {
					f.Match = isCachingYes
				}
				srv.Inject(f)
				got := make(chan acquired, 1)
				go func() {
					lock, err := locks.Acquire(ctx, "push:retry:wait", 30*time.Second, lease.WithWaitUntilDone(),
						lease.WithRetryEvery(time.Minute))
					got <- acquired{lock: lock, err: err, at: time.Now()}
				}()
				select {
				case <-fired:
				case <-ctx.Done():
					t.Fatal("the waiter's read never met the fault")
				}
				eventually(t, "the waiter parked on the tracked key", func() bool {
					return parkedWaiters(locks, "push:retry:wait") == 1
				})
				start := time.Now()
				srv.Exec("DEL", "push:retry:wait")
				r := <-got
				if r.err != nil {
					t.Fatalf("the waiter: %v; want the lock soon after the release", r.err)
				}
				_ = r.lock.Close()
				t.Logf("the waiter took the key %v after its release", r.at.Sub(start))
			})
		}
	}
}

// busyScript keeps a real server busy until an admin's SCRIPT KILL (or,
// should none come, for 20 s): the test ends it once what it checks during
// the busy spell was seen, so no load makes the spell end too soon. The
// script writes nothing, so SCRIPT KILL may end it.
const busyScript = `local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - start > 20000000
return 1`

// TestPushWatcherDropWakes_ABusyRealServerRereadsEveryKey: on a real
// redis-server 7.0 of the test's own (busy-reply-threshold 100 ms), a
// script keeps the server busy while a read on the watcher is sent: its
// CLIENT CACHING YES is answered BUSY and the watcher is dropped. The keys
// tracked on it are read again (retried until the script ends): a third
// party's overwrite of the holder's key after the script ends the holder
// at once (lease 30 s), and the waiter (retry interval a minute) is woken —
// it takes the key once it is released, or its try while the server was
// still busy got BUSY (a waiting acquisition ends on a did-not-run reply).
func casePushWatcherDropWakes_ABusyRealServerRereadsEveryKey(t *testing.T, tr Transport) {
	private := realserver.StartPrivate(t, "--busy-reply-threshold", "100")
	addr, password := private.Addr, private.Password
	admin, err := realserver.Dial(addr, password)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	locks := newLocks(t, tr, clientOf([]string{addr}, "", password, true))
	ctx := ctxT(t)
	holder, err := locks.Acquire(ctx, "push:busy:held", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	probe, err := locks.Acquire(ctx, "push:busy:probe", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if _, err := admin.Do("SET", "push:busy:wait", "someone-else", "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	got := make(chan acquired, 1)
	go func() {
		lock, err := locks.Acquire(ctx, "push:busy:wait", 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
		got <- acquired{lock: lock, err: err, at: time.Now()}
	}()
	eventually(t, "every key tracked", func() bool {
		return holderArmed(locks, "push:busy:held") && holderArmed(locks, "push:busy:probe") &&
			parkedWaiters(locks, "push:busy:wait") == 1
	})
	busy, err := realserver.Dial(addr, password)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if err := busy.Send("EVAL", busyScript, "0"); err != nil {
		t.Fatal(err)
	}
	if reply, err := admin.Do("GET", "push:busy:wait"); err != nil || !strings.HasPrefix(reply, "-BUSY ") {
		t.Fatalf("GET while the script runs: %q %v; want BUSY", reply, err)
	}
	leaseinternal.Driver(locks).Invalidated(addr, []string{"push:busy:probe"}) // as a push would: the probe's read meets BUSY
	eventually(t, "the probe's read failed", func() bool { return readRetryPending(locks, "push:busy:probe") })
	if reply, err := admin.Do("SCRIPT", "KILL"); err != nil || reply != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL: %q %v", reply, err)
	}
	if reply, err := busy.Reader.ReadString('\n'); err != nil || !strings.HasPrefix(reply, "-") {
		t.Fatalf("the killed script: %q %v; want its error", reply, err)
	}
	start := time.Now()
	if _, err := admin.Do("SET", "push:busy:held", "thief", "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	waitDone(t, holder.Context())
	wantReadRefused(t, holder)
	t.Logf("the holder learned of the overwrite %v after the script ended", time.Since(start))
	if _, err := admin.Do("DEL", "push:busy:wait"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		switch {
		case r.err == nil:
			_ = r.lock.Close()
		case !errors.Is(r.err, lease.ErrDidNotRun):
			t.Fatalf("the waiter: %v; want the key, or BUSY for a try made while the script ran", r.err)
		}
		t.Logf("the waiter: %v", r.err)
	case <-ctx.Done():
		t.Fatal("the waiter was never woken")
	}
	eventually(t, "the probe's key tracked again", func() bool { return holderArmed(locks, "push:busy:probe") })
}

func init() {
	register(
		Case{"PushWatcherDropWakes_ADidNotRunReplyToCachingRereadsEveryKey", casePushWatcherDropWakes_ADidNotRunReplyToCachingRereadsEveryKey},
		Case{"PushSurvivesWatcherReconnect_AWaitersFailedReadIsTriedAgainSoon", casePushSurvivesWatcherReconnect_AWaitersFailedReadIsTriedAgainSoon},
		Case{"PushWatcherDropWakes_ABusyRealServerRereadsEveryKey", casePushWatcherDropWakes_ABusyRealServerRereadsEveryKey},
	)
}
