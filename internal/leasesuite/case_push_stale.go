package leasesuite

import (
	"context"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/internal/simtest"
	"github.com/respire-go/respire/sim"
)

// recheckAsked reports whether the holders' read of wireKey in flight was
// asked for another round (a change, or a new holder, came during it).
func recheckAsked(locks *lease.Locks, wireKey string) bool {
	k := leaseinternal.Driver(locks).PushKey(wireKey)
	return k.Reading && k.Recheck
}

// isHeldByHub reports whether a keep-alive holder of wireKey is registered.
func isHeldByHub(locks *lease.Locks, wireKey string) bool {
	return leaseinternal.Driver(locks).PushKey(wireKey).Holders > 0
}

// gate returns a channel to hold a reply with and its opener (also run
// when the test ends).
func gate(t *testing.T) (<-chan struct{}, func()) {
	g := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(g) }) }
	t.Cleanup(open)
	return g, open
}

// TestPushChangeDuringReadIsSeen_AStaleHolderReadWakesTheWaiter: a holders'
// read that spans its key's release — the read found the holder's token,
// then the release's push came while the holder was still registered (so
// it asked the read for another round), and the holder left before the
// read settled — finds nobody to read again for, so the waiter of the key
// (same Locks, retry interval a minute) is woken and takes it. Driven on a
// two-node sim cluster: the read's batch also holds a key of the other
// node, whose reply is held, and the release's reply is held until the
// push was seen.
func casePushChangeDuringReadIsSeen_AStaleHolderReadWakesTheWaiter(t *testing.T, tr Transport) {
	c := simtest.StartCluster(t, sim.ClusterConfig{Profiles: []sim.Profile{sim.Redis84, sim.Redis84}, Password: simPassword})
	ctx := ctxT(t)
	locks := newLocks(t, tr, clientOf(c.Addrs(), "", simPassword, true))
	// The hub's read, not the release, must wake the waiter: the release
	// would carry its try otherwise (rule PushHandsOverWithinOneLocks).
	leaseinternal.Driver(locks).DisableHandOver()
	key, other := keyForNode(t, c, "", 0), keyForNode(t, c, "", 1)
	holder, err := locks.Acquire(ctx, key, 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	slow, err := locks.Acquire(ctx, other, 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	got := make(chan acquired, 1)
	go func() {
		lock, err := locks.Acquire(ctx, key, 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
		got <- acquired{lock: lock, err: err, at: time.Now()}
	}()
	eventually(t, "both keys tracked, the waiter parked", func() bool {
		return holderArmed(locks, key) && holderArmed(locks, other) && parkedWaiters(locks, key) == 1
	})
	otherRead, openOtherRead := gate(t)
	c.Node(1).Inject(sim.Fault{Kind: sim.DelayReply, Command: "GET", ClientID: watcherID(t, c.Node(1)), Gate: otherRead})
	releaseReply, openRelease := gate(t)
	c.Node(0).Inject(sim.Fault{Kind: sim.DelayReply, Gate: releaseReply, Match: func(args []string) bool {
		return slices.Contains([]string{"DELEX", "DELIFEQ", "EVALSHA", "EVAL"}, strings.ToUpper(args[0])) &&
			slices.Contains(args, key)
	}})
	c.Node(0).ResetLog()
	leaseinternal.Driver(locks).Invalidated(c.Node(0).Addr(), []string{key, other}) // as the push of a renewal of each
	waitLog(t, c.Node(0), func(e sim.Entry) bool { return e.Args[0] == "GET" && e.Args[1] == key })
	if reading, batches, _, _ := holderChecks(locks); reading != 2 || batches != 1 {
		t.Fatalf("%d holders' reads in %d batches; want both keys in one", reading, batches)
	}
	released := make(chan error, 1)
	go func() { _, err := holder.Release(ctx); released <- err }()
	eventually(t, "the release's push asked the read for another round", func() bool { return recheckAsked(locks, key) })
	openRelease()
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	eventually(t, "the holder unregistered", func() bool { return !isHeldByHub(locks, key) })
	start := time.Now()
	openOtherRead() // the batch settles: it found the holder's token, and the holder is gone
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter: %v; want the key, woken once the stale read settled", r.err)
	}
	defer r.lock.Close()
	t.Logf("the waiter took the key %v after the stale read settled", r.at.Sub(start))
	if slow.State() != lease.StateHeld {
		t.Fatalf("the other key's holder: %v; want held", slow.State())
	}
}

// watcherConn returns the proxied connection of srv's one tracking
// connection (the watcher), matched by the address the server sees.
func watcherConn(t *testing.T, proxy *faultproxy.Proxy, srv *sim.Server) *faultproxy.Conn {
	t.Helper()
	id := strconv.FormatInt(watcherID(t, srv), 10)
	for _, line := range strings.Split(srv.Exec("CLIENT", "LIST"), "\n") {
		if !slices.Contains(strings.Fields(line), "id="+id) {
			continue
		}
		for _, f := range strings.Fields(line) {
			if addr, ok := strings.CutPrefix(f, "addr="); ok {
				for _, c := range proxy.Conns() {
					if c.UpstreamLocalAddr() == addr {
						return c
					}
				}
			}
		}
	}
	t.Fatal("the watcher's connection is not one of the proxy's")
	return nil
}

// waitersOf returns how many waiters of wireKey are registered.
func waitersOf(locks *lease.Locks, wireKey string) int {
	return leaseinternal.Driver(locks).PushKey(wireKey).Waiters
}

// TestPushChangeDuringReadIsSeen_AnAbandonedReadIsMadeAgainForTheOthers: a
// waiter gives up while its tracked read is held on the way to the server,
// and the key is released before that read runs (so it tracks a free key
// and no push follows): the waiter left behind (retry interval a minute),
// parked while that read was in flight, is not left on an untracked key —
// a fresh read follows the departure, finds the key free and wakes it.
func casePushChangeDuringReadIsSeen_AnAbandonedReadIsMadeAgainForTheOthers(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	proxy, err := faultproxy.Start(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	locks := newLocks(t, tr, clientOf([]string{proxy.Addr()}, "", simPassword, true))
	ctx := ctxT(t)
	const key = "push:abandoned"
	srv.Exec("SET", key, "someone-else", "PX", "60000")
	firstCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	first := make(chan acquired, 1)
	go func() {
		lock, err := locks.Acquire(firstCtx, key, 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
		first <- acquired{lock: lock, err: err}
	}()
	eventually(t, "the first waiter parked", func() bool { return parkedWaiters(locks, key) == 1 })
	watcher := watcherConn(t, proxy, srv)
	watcher.Stall(faultproxy.ToServer)
	t.Cleanup(func() { watcher.Unstall(faultproxy.ToServer) })
	srv.Exec("SET", key, "someone-else-again", "PX", "60000") // the first waiter tries, fails, and reads again: held
	eventually(t, "the first waiter's read held in the proxy", func() bool {
		return watcher.Buffered(faultproxy.ToServer) > 0
	})
	second := make(chan acquired, 1)
	go func() {
		lock, err := locks.Acquire(ctx, key, 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
		second <- acquired{lock: lock, err: err, at: time.Now()}
	}()
	eventually(t, "the second waiter registered", func() bool { return waitersOf(locks, key) == 2 })
	giveUp()
	if r := <-first; r.err == nil {
		t.Fatal("the first waiter acquired; want it to give up")
	}
	srv.Exec("DEL", key)
	watcher.Unstall(faultproxy.ToServer) // the abandoned read runs now, on a free key
	r := <-second
	if r.err != nil {
		t.Fatalf("the second waiter: %v; want the key", r.err)
	}
	_ = r.lock.Close()
}

// TestPushWakesOneWaiterPerRelease_AFailedRearmWakesTheNextWaiter: the
// waiter that took the key leaves with the baton, and the read that
// should track the key again for the one left fails (LOADING): nobody
// tracks the key, so the next waiter (retry interval a minute) is woken to
// try and read again itself, and it is woken by the later release.
func casePushWakesOneWaiterPerRelease_AFailedRearmWakesTheNextWaiter(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
	ctx := ctxT(t)
	const key = "push:rearm"
	srv.Exec("SET", key, "someone-else", "PX", "60000")
	got := make(chan acquired, 2)
	for range 2 {
		go func() {
			lock, err := locks.Acquire(ctx, key, 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
			got <- acquired{lock: lock, err: err, at: time.Now()}
		}()
	}
	eventually(t, "both waiters parked", func() bool { return parkedWaiters(locks, key) == 2 })
	fired := make(chan sim.FaultRecord, 1)
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "GET", ClientID: watcherID(t, srv), Fired: fired,
		Error: "LOADING Redis is loading the dataset in memory"})
	srv.Exec("DEL", key) // one waiter takes it and leaves with the baton; its re-read fails
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	select {
	case <-fired:
	case <-ctx.Done():
		t.Fatal("the re-read never came")
	}
	eventually(t, "the other waiter tracking the key itself", func() bool { return parkedWaiters(locks, key) == 1 })
	if _, err := r.lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r = <-got
	if r.err != nil {
		t.Fatalf("the other waiter: %v; want the key after the release", r.err)
	}
	_ = r.lock.Close()
}

// TestPushWakesOneWaiterPerRelease_CloseCancelsTheRearm: Locks.Close does
// not wait for the background read that tracks a key again for the
// waiters left after one took it, when the watcher does not answer: it is
// cancelled, and Close takes about rueidis' one-second escape for the
// watcher's pending read (it took actor.PushCheckTimeout and more before).
func casePushWakesOneWaiterPerRelease_CloseCancelsTheRearm(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
	ctx := ctxT(t)
	const key = "push:rearm:close"
	srv.Exec("SET", key, "someone-else", "PX", "60000")
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	got := make(chan acquired, 2)
	for range 2 {
		go func() {
			lock, err := locks.Acquire(waitCtx, key, 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
			got <- acquired{lock: lock, err: err}
		}()
	}
	eventually(t, "both waiters parked", func() bool { return parkedWaiters(locks, key) == 2 })
	gateWatcherReads(t, srv)
	srv.ResetLog()
	srv.Exec("DEL", key)
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	waitLog(t, srv, func(e sim.Entry) bool { return e.Args[0] == "GET" && e.Args[1] == key })
	stop() // the other waiter gives up; the re-read hangs on in the background
	<-got
	start := time.Now()
	locks.Close()
	took := time.Since(start)
	t.Logf("Locks.Close took %v", took)
	if took >= actor.PushCheckTimeout/2 {
		t.Fatalf("Locks.Close took %v: it waited for the hanging re-read", took)
	}
}

func init() {
	register(
		Case{"PushChangeDuringReadIsSeen_AStaleHolderReadWakesTheWaiter", casePushChangeDuringReadIsSeen_AStaleHolderReadWakesTheWaiter},
		Case{"PushChangeDuringReadIsSeen_AnAbandonedReadIsMadeAgainForTheOthers", casePushChangeDuringReadIsSeen_AnAbandonedReadIsMadeAgainForTheOthers},
		Case{"PushWakesOneWaiterPerRelease_AFailedRearmWakesTheNextWaiter", casePushWakesOneWaiterPerRelease_AFailedRearmWakesTheNextWaiter},
		Case{"PushWakesOneWaiterPerRelease_CloseCancelsTheRearm", casePushWakesOneWaiterPerRelease_CloseCancelsTheRearm},
	)
}
