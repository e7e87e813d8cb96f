package leasesuite

import (
	"context"
	"errors"
	"fmt"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

// isExtend matches a renewal of key: SET … IFEQ … or the extend script.
func isExtend(key string) func(sim.Entry) bool {
	return func(e sim.Entry) bool {
		if isRenewal(key)(e) {
			return true
		}
		return len(e.Args) >= 4 && (strings.EqualFold(e.Args[0], "EVALSHA") && e.Args[1] == conn.ExtendScriptSHA ||
			strings.EqualFold(e.Args[0], "EVAL") && e.Args[1] == conn.ExtendScript) && e.Args[3] == key
	}
}

func countMatching(log []sim.Entry, match func(sim.Entry) bool) int {
	n := 0
	for _, e := range log {
		if match(e) {
			n++
		}
	}
	return n
}

// TestPushIgnoresOwnRenewals_NoWakeNoLoss: a holder's own keep-alive
// renewals change its key, so the watcher is told; the holder's read finds
// its token and nothing happens: the lock stays held, a waiter of the same
// Locks (retry interval a minute) is not woken (no SET NX), and each
// renewal costs at most one read on the watcher (which tracks the key
// again; OPTIN tracking is one-shot).
func casePushIgnoresOwnRenewals_NoWakeNoLoss(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		locks := tg.locks(t)
		// A lease of 2 s (renewed about every second): with 400 ms a loaded
		// host (the whole suite beside two CPU burners) once kept a renewal
		// past the lease, and the four renewals never came.
		lock, err := locks.Acquire(ctx, "push:own", 2*time.Second, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		waitCtx, stopWaiting := context.WithCancel(ctx)
		defer stopWaiting()
		got := make(chan error, 1)
		go func() {
			_, err := locks.Acquire(waitCtx, "push:own", time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
			got <- err
		}()
		eventually(t, "the waiter parked", func() bool { return parkedWaiters(locks, "push:own") == 1 })
		tg.srv.ResetLog()
		before := pushStatsOf(locks)
		eventually(t, "four renewals", func() bool {
			if lock.Context().Err() != nil {
				t.Fatalf("the lock ended before four renewals: %v", context.Cause(lock.Context()))
			}
			return countMatching(tg.srv.Log(), isExtend("push:own")) >= 4
		})
		eventually(t, "the key tracked again", func() bool { return holderArmed(locks, "push:own") })
		log, after := tg.srv.Log(), pushStatsOf(locks)
		renewals := countMatching(log, isExtend("push:own"))
		reads := after.HolderReads - before.HolderReads
		t.Logf("%d renewals, %d holder reads, %d waiter reads", renewals, reads, after.Reads-before.Reads)
		if lock.Context().Err() != nil || lock.State() != lease.StateHeld || after.Refuted != 0 {
			t.Fatalf("own renewals ended the lock: %v, state %v, refuted %d", context.Cause(lock.Context()), lock.State(), after.Refuted)
		}
		if n := countSetNX(log, "push:own"); n != 0 {
			t.Errorf("the waiter tried SET NX %d times during own renewals; want 0", n)
		}
		if reads > renewals+1 {
			t.Errorf("%d reads for %d renewals; want at most one each", reads, renewals)
		}
		stopWaiting()
		<-got
	})
}

// TestPushFallsBackToPolling_TrackingDenied: for a user denied
// CLIENT TRACKING, the watcher's refusal is remembered for the node (one
// attempt), waiters poll at their retry interval and get the lock after a
// release, and a keep-alive holder keeps its lock.
func casePushFallsBackToPolling_TrackingDenied(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		perms := append(slices.Clone(leastPrivilege[tg.profile]), "client|id", "client|info", "client|kill")
		tg.srv.SetUser("locker", "lockerpw", perms...)
		locks := newLocks(t, tr, clientOf([]string{tg.srv.Addr()}, "locker", "lockerpw", true))
		holderLocks := tg.locks(t)
		holder, err := holderLocks.Acquire(ctx, "push:acl", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 2; round++ {
			got := make(chan acquired, 1)
			go func() {
				lock, err := locks.Acquire(ctx, "push:acl", 30*time.Second, lease.WithWaitUntilDone(),
					lease.WithRetryEvery(20*time.Millisecond), lease.WithKeepAlive())
				got <- acquired{lock: lock, err: err}
			}()
			eventually(t, "the refusal remembered", func() bool {
				return trackingRefused(t, locks, tg.srv.Addr()) || trackingRefused(t, locks, holderNode(locks))
			})
			if _, err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.err != nil {
				t.Fatalf("round %d: the polling waiter: %v", round, r.err)
			}
			if r.lock.Context().Err() != nil {
				t.Fatalf("the holder without push lost its lock: %v", context.Cause(r.lock.Context()))
			}
			holder = r.lock
		}
		if !tg.real {
			// The watcher's CLIENT TRACKING ON … OPTIN NOLOOP: rueidis' sends it
			// bare, go-redis' with REDIRECT to its listener in between.
			watcherTracking := func(e sim.Entry) bool {
				return isCommand("CLIENT", "TRACKING", "ON")(e) && slices.Equal(e.Args[len(e.Args)-2:], []string{"OPTIN", "NOLOOP"})
			}
			if n := countMatching(tg.srv.Log(), watcherTracking); n != 1 {
				t.Errorf("CLIENT TRACKING ON sent %d times by the denied user; want 1 (remembered)", n)
			}
		}
		_ = holder.Close()
	})
}

// holderNode returns the node of locks' standalone session.
func holderNode(locks *lease.Locks) string {
	if s := leaseinternal.Driver(locks).StandaloneSession(); s != nil {
		return s.Node()
	}
	return ""
}

// TestWithoutPush_SendsNoTracking: WithoutPush sends no tracking command;
// a waiter polls and gets the lock after the release.
func caseWithoutPush_SendsNoTracking(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true), lease.WithoutPush())
	ctx := ctxT(t)
	holder, err := locks.Acquire(ctx, "k", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan acquired, 1)
	go func() {
		lock, err := locks.Acquire(ctx, "k", 30*time.Second, lease.WithWait(5*time.Second), lease.WithRetryEvery(10*time.Millisecond))
		got <- acquired{lock: lock, err: err}
	}()
	waitLog(t, srv, func(e sim.Entry) bool { return countSetNX([]sim.Entry{e}, "k") == 1 && e.Seq > 1 })
	if _, err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	_ = r.lock.Close()
	for _, e := range srv.Log() {
		if strings.EqualFold(e.Args[0], "CLIENT") && len(e.Args) > 1 && (strings.EqualFold(e.Args[1], "TRACKING") ||
			strings.EqualFold(e.Args[1], "CACHING")) {
			t.Fatalf("WithoutPush sent %v", e.Args)
		}
	}
}

// TestPushWakesWaiters_LeastPrivilegeUserWithTracking: the ACL line of
// docs/compatibility.md plus +client|tracking +client|caching is enough for
// push: a waiter of that user (retry interval a minute) is woken by the
// release, and its keep-alive lock learns of a third party's DEL at once.
func casePushWakesWaiters_LeastPrivilegeUserWithTracking(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		perms := append(slices.Clone(leastPrivilege[tg.profile]), "client|id", "client|info", "client|kill",
			"client|tracking", "client|caching")
		tg.srv.SetUser("locker", "lockerpw", perms...)
		locks := newLocks(t, tr, clientOf([]string{tg.srv.Addr()}, "locker", "lockerpw", true))
		holder, err := tg.locks(t).Acquire(ctx, "push:acl2", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan acquired, 1)
		go func() {
			lock, err := locks.Acquire(ctx, "push:acl2", 30*time.Second, lease.WithWaitUntilDone(),
				lease.WithRetryEvery(time.Minute), lease.WithKeepAlive())
			got <- acquired{lock: lock, err: err}
		}()
		eventually(t, "the waiter parked", func() bool { return parkedWaiters(locks, "push:acl2") == 1 })
		if _, err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.lock.Close()
		eventually(t, "the holder's key tracked", func() bool { return holderArmed(locks, "push:acl2") })
		tg.srv.Exec("DEL", "push:acl2")
		waitDone(t, r.lock.Context())
		var loss *lease.LossError
		if !errors.As(context.Cause(r.lock.Context()), &loss) || loss.Reason != lease.LossReadRefused {
			t.Fatalf("cause %v; want LossReadRefused", context.Cause(r.lock.Context()))
		}
	})
}

// TestPushSafetyNet_AParkedWaiterPollsAboutOnceASecond: a waiter whose key
// is tracked and who left the retry interval at its default sleeps 20 ×
// 50 ms between tries, not 50 ms (the push wakes it; the sleep is only the
// net for a lost push); with WithRetryEvery it keeps that interval.
func casePushSafetyNet_AParkedWaiterPollsAboutOnceASecond(t *testing.T, tr Transport) {
	for _, tc := range []struct {
		name  string
		opts  []lease.AcquireOption
		sleep time.Duration
	}{
		{"default interval", nil, 20 * sm.DefaultRetryEvery},
		{"WithRetryEvery", []lease.AcquireOption{lease.WithRetryEvery(100 * time.Millisecond)}, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, locks, clock := contended(t, tr) //
			ctx, cancel := context.WithCancel(ctxT(t))
			done := make(chan error, 1)
			go func() {
				_, err := locks.Acquire(ctx, "k", time.Minute, append(tc.opts, lease.WithWaitUntilDone())...)
				done <- err
			}()
			for try := 2; try <= 3; try++ {
				eventually(t, "the waiter parked on the tracked key", func() bool {
					return parkedWaiters(locks, "k") == 1 && clock.Pending() == 1
				})
				clock.Advance(tc.sleep - time.Millisecond)
				// A sleep that ended in the Advance took its timer away; the
				// waiter arms a new one only after its next try's reply.
				eventually(t, "the waiter parked again", func() bool {
					return parkedWaiters(locks, "k") == 1 && clock.Pending() == 1
				})
				if n := acquireTries(srv.Log(), "k"); n != try-1 {
					t.Fatalf("%d SET NX before the safety net's sleep passed; want %d", n, try-1)
				}
				clock.Advance(time.Millisecond)
				eventually(t, "the safety net's try", func() bool { return acquireTries(srv.Log(), "k") == try })
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("Acquire = %v; want context.Canceled", err)
			}
		})
	}
}

// holderChecks returns the holders' reads in flight, the batches they were
// sent in, the keys queued for one and the workers running in locks' push
// hub.
func holderChecks(locks *lease.Locks) (reading, batches, queued, workers int) {
	return leaseinternal.Driver(locks).HolderChecks()
}

// holdTracked acquires n keep-alive locks (keys prefix0…) on locks, from a
// few goroutines, and waits until every key is tracked; it returns the
// locks and wire keys.
func holdTracked(t *testing.T, locks *lease.Locks, prefix string, n int) ([]*lease.Lock, []string) {
	t.Helper()
	ctx := ctxT(t)
	held, keys := make([]*lease.Lock, n), make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				keys[i] = fmt.Sprintf("%s%d", prefix, i)
				held[i], errs[i] = locks.Acquire(ctx, keys[i], 30*time.Second, lease.WithKeepAlive())
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every holder's key tracked", func() bool {
		for _, key := range keys {
			if !holderArmed(locks, key) {
				return false
			}
		}
		return true
	})
	return held, keys
}

// watcherID returns the CLIENT ID of srv's one tracking connection.
func watcherID(t *testing.T, srv *sim.Server) int64 {
	t.Helper()
	ids := trackingClientIDs(srv)
	if len(ids) != 1 {
		t.Fatalf("tracking connections %v; want the watcher alone", ids)
	}
	id, err := strconv.ParseInt(ids[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// gateWatcherReads holds the reply of the next GET on srv's watcher
// connection, and so every read sent after it there, until the returned
// func (also run when the test ends) is called.
func gateWatcherReads(t *testing.T, srv *sim.Server) (open func()) {
	t.Helper()
	id := watcherID(t, srv)
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "GET", ClientID: id, Gate: gate})
	return open
}

// allTracked reports whether every key's holders are confirmed, the
// workers gone and no entry left.
func allTracked(locks *lease.Locks, keys []string) bool {
	_, _, _, workers := holderChecks(locks)
	return workers == 0 && pushEntries(locks) == 0 && !slices.ContainsFunc(keys, func(key string) bool {
		return !holderArmed(locks, key)
	})
}

// TestPushDetectsLoss_HolderReadsAreBoundedByWorkers: when the keys of
// more keep-alive holders than actor.PushCheckWorkers batches of actor.PushCheckBatch
// hold are invalidated at once while the node does not answer, that many
// batches, each of actor.PushCheckBatch keys, are in flight and the other keys
// wait in the queue; invalidated again meanwhile, no key is queued twice
// and the reads in flight go once more. Once the node answers every holder
// is confirmed with never more than actor.PushCheckWorkers batches in flight nor
// more than actor.PushCheckBatch keys in one, the workers end and no entry is
// left.
func casePushDetectsLoss_HolderReadsAreBoundedByWorkers(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
	const inFlight = actor.PushCheckWorkers * actor.PushCheckBatch
	const n = inFlight + actor.PushCheckBatch/2
	held, keys := holdTracked(t, locks, "push:bound:", n)
	before := pushStatsOf(locks)
	open := gateWatcherReads(t, srv)
	hanging := func() bool {
		reading, batches, queued, workers := holderChecks(locks)
		return reading == inFlight && batches == actor.PushCheckWorkers && queued == n-inFlight && workers == actor.PushCheckWorkers
	}
	leaseinternal.Driver(locks).Invalidated(srv.Addr(), keys) // as the watcher hands over a push naming them
	eventually(t, "the workers' batches hanging, the other keys queued", hanging)
	leaseinternal.Driver(locks).Invalidated(srv.Addr(), keys)
	if !hanging() {
		reading, batches, queued, workers := holderChecks(locks)
		t.Fatalf("after a second invalidation: %d reading in %d batches, %d queued, %d workers; want %d in %d, %d, %d",
			reading, batches, queued, workers, inFlight, actor.PushCheckWorkers, n-inFlight, actor.PushCheckWorkers)
	}
	open()
	eventually(t, "every key tracked again and the workers gone", func() bool { return allTracked(locks, keys) })
	after := pushStatsOf(locks)
	if after.HolderBatchesPeak != actor.PushCheckWorkers || after.HolderBatchMax != actor.PushCheckBatch ||
		after.HolderReadsPeak != inFlight {
		t.Errorf("at most %d batches in flight at once, %d reads in one, %d reads in flight; want %d, %d, %d",
			after.HolderBatchesPeak, after.HolderBatchMax, after.HolderReadsPeak, actor.PushCheckWorkers, actor.PushCheckBatch, inFlight)
	}
	if reads := after.HolderReads - before.HolderReads; reads != n+inFlight {
		t.Errorf("%d holders' reads; want %d (each key once, the %d in flight during the second push twice)",
			reads, n+inFlight, inFlight)
	}
	for _, l := range held {
		if l.State() != lease.StateHeld || after.Refuted != 0 {
			t.Fatalf("%s: %v (cause %v), %d refuted; want every holder held", l.Key(), l.State(),
				context.Cause(l.Context()), after.Refuted)
		}
	}
}

// watcherReads returns the keys of the GETs srv's log shows from the
// watcher id, checking that each comes right after a CLIENT CACHING YES.
func watcherReads(t *testing.T, srv *sim.Server, id int64) []string {
	t.Helper()
	var keys []string
	caching := false
	for _, e := range srv.Log() {
		switch {
		case e.ClientID != id:
		case slices.Equal(e.Args, []string{"CLIENT", "CACHING", "YES"}):
			caching = true
		case e.Args[0] == "GET" && caching:
			keys, caching = append(keys, e.Args[1]), false
		default:
			t.Fatalf("the watcher received %q, not CLIENT CACHING YES + GET", e.Args)
		}
	}
	return keys
}

// TestPushDetectsLoss_HolderReadsAreBatchedPerWatcher: 256 holders whose
// keys are invalidated at once are read in ceil(256/actor.PushCheckBatch) batches
// (one with the batch at 256), one round trip each: with the watcher's
// replies held in a proxy, the server still receives CLIENT CACHING YES +
// GET for every key; once the replies flow, every holder is confirmed
// after that many batches. A read per round trip gets no further than one
// GET per worker while the replies are held.
func casePushDetectsLoss_HolderReadsAreBatchedPerWatcher(t *testing.T, tr Transport) {
	const n = 256
	const batches = (n + actor.PushCheckBatch - 1) / actor.PushCheckBatch
	if batches > actor.PushCheckWorkers {
		t.Fatalf("%d batches of %d keys cannot all be in flight with %d workers", batches, actor.PushCheckBatch, actor.PushCheckWorkers)
	}
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	proxy, err := faultproxy.Start(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	locks := newLocks(t, tr, clientOf([]string{proxy.Addr()}, "", simPassword, true))
	t.Cleanup(func() { proxy.UnstallAll(faultproxy.Both) })
	held, keys := holdTracked(t, locks, "push:batch:", n)
	id := watcherID(t, srv)
	before := pushStatsOf(locks)
	srv.ResetLog()
	proxy.StallAll(faultproxy.ToClient) // the replies to every connection, the watcher's included, are held
	leaseinternal.Driver(locks).Invalidated(srv.Addr(), keys)
	seen := 0
	if _, err := srv.WaitFor(ctxT(t), func(e sim.Entry) bool {
		if e.ClientID == id && e.Args[0] == "GET" {
			seen++
		}
		return seen == n
	}); err != nil {
		t.Fatalf("%d of %d GETs reached the server while the replies were held: %v", seen, n, err)
	}
	if got := watcherReads(t, srv, id); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(keys))) {
		t.Fatalf("the watcher read %d keys %.4q…; want each of the %d once", len(got), got, n)
	}
	if reading, inFlight, _, workers := holderChecks(locks); reading != n || inFlight != batches || workers != batches {
		t.Fatalf("%d reads in %d batches, %d workers; want %d in %d, %d", reading, inFlight, workers, n, batches, batches)
	}
	proxy.UnstallAll(faultproxy.ToClient)
	eventually(t, "every key tracked again and the workers gone", func() bool { return allTracked(locks, keys) })
	after := pushStatsOf(locks)
	if sent, reads := after.HolderBatches-before.HolderBatches, after.HolderReads-before.HolderReads; sent != batches || reads != n {
		t.Errorf("%d reads in %d batches; want %d in %d", reads, sent, n, batches)
	}
	for _, l := range held {
		if l.State() != lease.StateHeld {
			t.Fatalf("%s: %v (cause %v); want held", l.Key(), l.State(), context.Cause(l.Context()))
		}
	}
}

// TestPushDetectsLoss_CloseDropsTheQueuedHolderReads: Locks.Close while
// holders' reads hang on a node that does not answer returns without
// waiting for them (well within actor.PushCheckTimeout): the batches in flight
// are cancelled, the queued keys dropped, the workers end, and no entry or
// retry timer is left.
func casePushDetectsLoss_CloseDropsTheQueuedHolderReads(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
	const inFlight = actor.PushCheckWorkers * actor.PushCheckBatch
	const n = inFlight + 10
	_, keys := holdTracked(t, locks, "push:close:", n)
	gateWatcherReads(t, srv)
	leaseinternal.Driver(locks).Invalidated(srv.Addr(), keys)
	eventually(t, "the workers' reads hanging, the other keys queued", func() bool {
		reading, batches, queued, _ := holderChecks(locks)
		return reading == inFlight && batches == actor.PushCheckWorkers && queued == n-inFlight
	})
	start := time.Now()
	locks.Close()
	took := time.Since(start)
	t.Logf("Locks.Close took %v", took)
	if took >= actor.PushCheckTimeout {
		t.Errorf("Locks.Close took %v: it waited for the hanging reads", took)
	}
	reading, batches, queued, workers := holderChecks(locks)
	entries, retries := leaseinternal.Driver(locks).PushEntries(), leaseinternal.Driver(locks).PushRetries()
	if reading+batches+queued+workers+entries+retries != 0 {
		t.Fatalf("after Close: %d reading in %d batches, %d queued, %d workers, %d entries, %d retries; want none",
			reading, batches, queued, workers, entries, retries)
	}
}

func init() {
	register(
		Case{"PushIgnoresOwnRenewals_NoWakeNoLoss", casePushIgnoresOwnRenewals_NoWakeNoLoss},
		Case{"PushFallsBackToPolling_TrackingDenied", casePushFallsBackToPolling_TrackingDenied},
		Case{"WithoutPush_SendsNoTracking", caseWithoutPush_SendsNoTracking},
		Case{"PushWakesWaiters_LeastPrivilegeUserWithTracking", casePushWakesWaiters_LeastPrivilegeUserWithTracking},
		Case{"PushSafetyNet_AParkedWaiterPollsAboutOnceASecond", casePushSafetyNet_AParkedWaiterPollsAboutOnceASecond},
		Case{"PushDetectsLoss_HolderReadsAreBoundedByWorkers", casePushDetectsLoss_HolderReadsAreBoundedByWorkers},
		Case{"PushDetectsLoss_HolderReadsAreBatchedPerWatcher", casePushDetectsLoss_HolderReadsAreBatchedPerWatcher},
		Case{"PushDetectsLoss_CloseDropsTheQueuedHolderReads", casePushDetectsLoss_CloseDropsTheQueuedHolderReads},
	)
}
