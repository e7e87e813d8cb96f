package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

// trackingClientIDs returns the ids of the connections with tracking on
// (CLIENT LIST flags containing t), from the admin connection.
func trackingClientIDs(srv wireServer) []string {
	var ids []string
	for _, line := range strings.Split(srv.Exec("CLIENT", "LIST"), "\n") {
		var id, flags string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(f, "flags="); ok {
				flags = v
			}
		}
		if id != "" && strings.Contains(flags, "t") {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestPushSurvivesWatcherReconnect_RereadsEveryKey: when the watchers' connections are
// killed, every watched key is read again on a fresh watcher (a push may
// have been missed): the waiter re-parks, the holder's key is tracked
// again, and a later DEL still ends the holder at once and hands the key
// to the waiter (retry interval a minute).
func casePushSurvivesWatcherReconnect_RereadsEveryKey(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		holderLocks := newLocks(t, tr, clientOf([]string{tg.srv.Addr()}, "", tg.password, true))
		waiterLocks := newLocks(t, tr, clientOf([]string{tg.srv.Addr()}, "", tg.password, true))
		holder, err := holderLocks.Acquire(ctx, "push:rc", 30*time.Second, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		got := make(chan acquired, 1)
		go func() {
			lock, err := waiterLocks.Acquire(ctx, "push:rc", 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
			got <- acquired{lock: lock, err: err}
		}()
		eventually(t, "both tracked", func() bool {
			return holderArmed(holderLocks, "push:rc") && parkedWaiters(waiterLocks, "push:rc") == 1
		})
		old := trackingClientIDs(tg.srv)
		if len(old) != 2 {
			t.Fatalf("tracking connections %v; want the two watchers", old)
		}
		for _, id := range old {
			tg.srv.Exec("CLIENT", "KILL", "ID", id)
		}
		eventually(t, "both tracked again on fresh watchers", func() bool {
			ids := trackingClientIDs(tg.srv)
			return len(ids) == 2 && ids[0] != old[0] && ids[1] != old[1] &&
				holderArmed(holderLocks, "push:rc") && parkedWaiters(waiterLocks, "push:rc") == 1
		})
		tg.srv.Exec("DEL", "push:rc")
		waitDone(t, holder.Context())
		var loss *lease.LossError
		if !errors.As(context.Cause(holder.Context()), &loss) || loss.Reason != lease.LossReadRefused {
			t.Fatalf("holder's cause %v; want LossReadRefused", context.Cause(holder.Context()))
		}
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatal(r.err)
			}
			_ = r.lock.Close()
		case <-ctx.Done():
			t.Fatal("the waiter was not woken after the reconnect")
		}
	})
}

// TestPushWakesOneWaiterPerRelease_NoStampede: 16 waiters of one Locks (retry
// interval a minute) take the key one after another, each releasing at
// once; each release wakes one waiter, so the hand-offs take about one
// SET NX each (no stampede), and the watcher connection is gone after
// Locks.Close (nothing tracked left on the server).
func casePushWakesOneWaiterPerRelease_NoStampede(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		locks := newLocks(t, tr, clientOf([]string{tg.srv.Addr()}, "", tg.password, true))
		defer locks.Close()
		first, err := locks.Acquire(ctx, "push:herd", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		const waiters = 16
		var wg sync.WaitGroup
		errs := make(chan error, waiters)
		for range waiters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lock, err := locks.Acquire(ctx, "push:herd", 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
				if err == nil {
					_, err = lock.Release(ctx)
				}
				errs <- err
			}()
		}
		eventually(t, "16 parked", func() bool { return parkedWaiters(locks, "push:herd") == waiters })
		tg.srv.ResetLog()
		start := time.Now()
		if _, err := first.Release(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		attempts := countSetNX(tg.srv.Log(), "push:herd")
		t.Logf("%d hand-offs in %v, %.2f SET NX per hand-off", waiters, time.Since(start), float64(attempts)/waiters)
		if attempts > 2*waiters {
			t.Errorf("%d SET NX for %d hand-offs; want about one each", attempts, waiters)
		}
		locks.Close()
		eventually(t, "no tracking connection left", func() bool { return len(trackingClientIDs(tg.srv)) == 0 })
		if got := tg.srv.Exec("EXISTS", "push:herd"); got != ":0\r\n" {
			t.Errorf("EXISTS push:herd = %q; want :0", got)
		}
	})
}

// TestPushSurvivesWatcherReconnect_RetriesABusyNode: when the watcher's
// connection ends and the node answers the fresh watcher's setup with
// LOADING, the holder's read is tried again (every 250 ms) until the node
// serves, so its key is tracked again and a later DEL still ends it at once.
func casePushSurvivesWatcherReconnect_RetriesABusyNode(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "push:busy", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	eventually(t, "tracked", func() bool { return holderArmed(locks, "push:busy") })
	fired := make(chan sim.FaultRecord, 4)
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "CLIENT", Error: "LOADING Redis is loading the dataset in memory",
		Fired: fired, Match: func(args []string) bool { return len(args) > 2 && args[1] == "TRACKING" && args[2] == "OFF" }})
	for _, id := range trackingClientIDs(srv) {
		srv.Exec("CLIENT", "KILL", "ID", id)
	}
	select {
	case <-fired:
	case <-ctx.Done():
		t.Fatal("the fresh watcher's setup never came")
	}
	eventually(t, "tracked again after the node served", func() bool {
		return holderArmed(locks, "push:busy") && len(trackingClientIDs(srv)) == 1
	})
	if trackingRefused(t, locks, srv.Addr()) {
		t.Fatal("LOADING was remembered as a refusal")
	}
	srv.Exec("DEL", "push:busy")
	waitDone(t, lock.Context())
	var loss *lease.LossError
	if !errors.As(context.Cause(lock.Context()), &loss) || loss.Reason != lease.LossReadRefused {
		t.Fatalf("cause %v; want LossReadRefused", context.Cause(lock.Context()))
	}
}

// TestPushSurvivesWatcherReconnect_CloseStopsThePendingRetry: a holder's
// read retried every 250 ms on a node that keeps answering LOADING leaves
// no retry timer behind once its Locks is closed.
func casePushSurvivesWatcherReconnect_CloseStopsThePendingRetry(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "push:retry", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "tracked", func() bool { return holderArmed(locks, "push:retry") })
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "CLIENT", Error: "LOADING Redis is loading the dataset in memory",
		Match: func(args []string) bool { return len(args) > 2 && args[1] == "TRACKING" && args[2] == "OFF" }})
	for _, id := range trackingClientIDs(srv) {
		srv.Exec("CLIENT", "KILL", "ID", id)
	}
	pending := leaseinternal.Driver(locks).PushRetries
	eventually(t, "a retry of the holder's read pending", func() bool { return pending() == 1 })
	_ = lock.Close()
	locks.Close()
	if n := pending(); n != 0 {
		t.Fatalf("%d retry timers left after Close", n)
	}
}

// TestPushSurvivesWatcherReconnect_AReleaseStopsThePendingRetry: a
// holder's read failed and its retry is pending when the holder releases:
// the retry reads for holders, none is left, so its timer is disarmed at
// once rather than left armed until it fires (a virtual clock that never
// moves shows it).
func casePushSurvivesWatcherReconnect_AReleaseStopsThePendingRetry(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "push:retry:release", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "tracked", func() bool { return holderArmed(locks, "push:retry:release") })
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "CLIENT", Error: "LOADING Redis is loading the dataset in memory",
		Match: func(args []string) bool { return len(args) > 2 && args[1] == "TRACKING" && args[2] == "OFF" }})
	for _, id := range trackingClientIDs(srv) {
		srv.Exec("CLIENT", "KILL", "ID", id)
	}
	pending := leaseinternal.Driver(locks).PushRetries
	eventually(t, "a retry of the holder's read pending", func() bool { return pending() == 1 })
	if err := lock.Close(); err != nil {
		t.Fatal(err)
	}
	if n := pending(); n != 0 {
		t.Fatalf("%d retry timers left after the last holder released", n)
	}
}

func init() {
	register(
		Case{"PushSurvivesWatcherReconnect_RereadsEveryKey", casePushSurvivesWatcherReconnect_RereadsEveryKey},
		Case{"PushWakesOneWaiterPerRelease_NoStampede", casePushWakesOneWaiterPerRelease_NoStampede},
		Case{"PushSurvivesWatcherReconnect_RetriesABusyNode", casePushSurvivesWatcherReconnect_RetriesABusyNode},
		Case{"PushSurvivesWatcherReconnect_CloseStopsThePendingRetry", casePushSurvivesWatcherReconnect_CloseStopsThePendingRetry},
		Case{"PushSurvivesWatcherReconnect_AReleaseStopsThePendingRetry", casePushSurvivesWatcherReconnect_AReleaseStopsThePendingRetry},
	)
}
