//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// The same checks of every conn.Transport method run against conn.Pool
// (rueidis) and Transport (go-redis) on the same real Redis 7.0: what the
// rueidis transport answers, the go-redis one answers too.

// transports returns both transports on the real standalone server.
func transports(t *testing.T) map[string]conn.Transport {
	addr, pw := realStandalone(t)
	return map[string]conn.Transport{
		"rueidis": rueidisPool(t, []string{addr}, pw),
		"goredis": newTransport(t, goredisClient(t, addr, pw)),
	}
}

type check struct {
	name string
	run  func(t *testing.T, tr conn.Transport)
}

var conformance = []check{
	{"AcquireExtendReleaseOwner", checkLockCycle},
	{"IdentityAndProbe", checkIdentity},
	{"FenceKillsAndIsShared", checkFence},
	{"ExtendManyInOrder", checkExtendMany},
	{"ExtendManyCarriesHolderRenewals", checkExtendManyHolders},
	{"WatchScoreIsPushed", checkWatchScore},
	{"FencedAcquireCounts", checkFenced},
	{"DoneContextIsNotSubmitted", checkDoneContext},
	{"RouteAbortIsNotSubmitted", checkAbort},
	{"RetireAllKeepsServing", checkRetireAll},
	{"WatchReadIsPushed", checkWatch},
	{"ReplicatedWithoutReplicas", checkReplicated},
	{"InvalidWaitRefused", checkInvalidWait},
	{"CloseRefusesLater", checkClose},
}

// TestGoRedisConformance_SameAsPool runs every check on both transports.
func TestGoRedisConformance_SameAsPool(t *testing.T) {
	for _, c := range conformance {
		t.Run(c.name, func(t *testing.T) {
			for name, tr := range transports(t) {
				t.Run(name, func(t *testing.T) { c.run(t, tr) })
			}
		})
	}
}

func mustDo(t *testing.T, tr conn.Transport, op conn.Op) conn.Result {
	t.Helper()
	res, err := tr.Do(ctxFor(t, 5*time.Second), op, nil)
	if err != nil {
		t.Fatalf("%s: %v", op.Name(), err)
	}
	return res
}

func checkLockCycle(t *testing.T, tr conn.Transport) {
	k, a, b := key(t, "lock"), token(t), token(t)
	if !mustDo(t, tr, conn.AcquireOp(k, a, 10000)).Owned {
		t.Fatal("acquire of a free key not owned")
	}
	if mustDo(t, tr, conn.AcquireOp(k, b, 10000)).Owned {
		t.Fatal("second acquire owned")
	}
	if r := mustDo(t, tr, conn.OwnerOp(k)); !r.Owned || r.Token != a {
		t.Fatalf("owner = %+v", r)
	}
	if !mustDo(t, tr, conn.ExtendOp(k, a, 20000)).Owned || mustDo(t, tr, conn.ExtendOp(k, b, 20000)).Owned {
		t.Fatal("extend by owner / other wrong")
	}
	if mustDo(t, tr, conn.ReleaseOp(k, b)).Owned || !mustDo(t, tr, conn.ReleaseOp(k, a)).Owned {
		t.Fatal("release by other / owner wrong")
	}
	if mustDo(t, tr, conn.OwnerOp(k)).Owned {
		t.Fatal("owner found after release")
	}
	if mustDo(t, tr, conn.ExtendOp(k, a, 20000)).Owned {
		t.Fatal("extend of a missing key owned")
	}
}

func checkIdentity(t *testing.T, tr conn.Transport) {
	s, err := tr.SessionForKey(ctxFor(t, 5*time.Second), key(t, "id"))
	if err != nil {
		t.Fatal(err)
	}
	id, ok := s.Identity()
	if !ok || id.ID <= 0 || id.Addr == "" || s.IdentityError() != nil {
		t.Fatalf("identity %+v %v %v", id, ok, s.IdentityError())
	}
	if err := s.ProbeKill(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if s.Retired() || s.Demoted() || !tr.IsPrimary(s.Node()) || tr.Cluster() {
		t.Fatal("fresh session retired, demoted or not primary")
	}
}

func checkFence(t *testing.T, tr conn.Transport) {
	ctx := ctxFor(t, 5*time.Second)
	s, err := tr.SessionForKey(ctx, key(t, "f"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = tr.Fence(ctx, s) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("fence: %v", err)
		}
	}
	if !s.Retired() {
		t.Fatal("fenced session not retired")
	}
	if _, err := s.Do(ctx, conn.OwnerOp(key(t, "x")), nil); !errors.Is(err, conn.ErrNotSubmitted) {
		t.Fatalf("Do on a fenced session: %v (%s)", err, classOf(err))
	}
	s2, err := tr.SessionForKey(ctx, key(t, "f"))
	if err != nil || s2 == s {
		t.Fatalf("after a fence: %v, same session %v", err, s2 == s)
	}
	id1, _ := s.Identity()
	id2, _ := s2.Identity()
	if s2.Node() == s.Node() && id1.ID == id2.ID || id1.Addr == id2.Addr {
		// CLIENT IDs are per node: only the same id on the same node, or
		// the same client address, is the fenced connection again.
		t.Fatalf("fresh session %s %+v is the fenced one (%s %+v)", s2.Node(), id2, s.Node(), id1)
	}
}

func checkExtendMany(t *testing.T, tr conn.Transport) {
	ctx := ctxFor(t, 5*time.Second)
	k1, k2, tok := key(t, "{e}1"), key(t, "{e}2"), token(t)
	mustDo(t, tr, conn.AcquireOp(k1, tok, 10000))
	mustDo(t, tr, conn.AcquireOp(k2, tok, 10000))
	s, err := tr.SessionForKey(ctx, k1)
	if err != nil {
		t.Fatal(err)
	}
	aborted := &conn.Route{}
	aborted.Abort()
	rs := s.ExtendMany(ctx, []conn.ExtendRequest{{Key: k1, Token: tok, TTLMillis: 20000},
		{Key: k2, Token: "other", TTLMillis: 20000}, {Key: key(t, "{e}3"), Token: tok, TTLMillis: 20000},
		{Key: k2, Token: tok, TTLMillis: 20000, Route: aborted}})
	if len(rs) != 4 || rs[0].Err != nil || !rs[0].Owned || rs[1].Err != nil || rs[1].Owned ||
		rs[2].Err != nil || rs[2].Owned || !errors.Is(rs[3].Err, conn.ErrAborted) {
		t.Fatalf("ExtendMany = %+v", rs)
	}
}

// checkExtendManyHolders: a permit's and a reader's renewals ride in one
// batch with a mutex's; a release in the batch is refused, not sent.
func checkExtendManyHolders(t *testing.T, tr conn.Transport) {
	ctx := ctxFor(t, 5*time.Second)
	name := key(t, "h")
	sem, err := conn.NewSemaphore("", name, 2)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := conn.NewRWLock("", name)
	if err != nil {
		t.Fatal(err)
	}
	mutex, tok := "{"+name+"}:mutex", token(t)
	mustDo(t, tr, conn.AcquireOp(mutex, tok, 10000))
	mustDo(t, tr, sem.AcquireOp(tok, 10000))
	mustDo(t, tr, rw.ReadAcquireOp(tok, 10000))
	s, err := tr.SessionForKey(ctx, sem.HoldersKey)
	if err != nil {
		t.Fatal(err)
	}
	requests := []conn.ExtendRequest{{Key: mutex, Token: tok, TTLMillis: 20000}, {Op: sem.RenewOp(tok, 20000)},
		{Op: rw.ReadRenewOp(tok, 20000)}, {Op: sem.RenewOp("nobody", 20000)}, {Op: sem.ReleaseOp(tok)}}
	for round := range 2 {
		rs := s.ExtendMany(ctx, requests)
		for i, want := range []bool{true, true, true, false} {
			if rs[i].Err != nil || rs[i].Owned != want {
				t.Fatalf("round %d request %d: %+v; want owned=%v", round, i, rs[i], want)
			}
		}
		if !errors.Is(rs[4].Err, conn.ErrNotBatchable) || conn.ClassOf(rs[4].Err) != conn.NotSubmitted {
			t.Fatalf("a release in the batch: %v", rs[4].Err)
		}
	}
	if r := mustDo(t, tr, sem.LeaseOp(tok)); !r.Owned || r.RemainingMillis < 15000 {
		t.Fatalf("permit after the batched renewal: %+v; want about 20 s left", r)
	}
}

// checkWatchScore: a member read tracks its sorted set; the holder's
// release is pushed.
func checkWatchScore(t *testing.T, tr conn.Transport) {
	got := make(chan []string, 16)
	tr.SetInvalidationHandler(func(_ string, keys []string) { got <- keys })
	sem, err := conn.NewSemaphore("", key(t, "ws"), 2)
	if err != nil {
		t.Fatal(err)
	}
	tok := token(t)
	mustDo(t, tr, sem.AcquireOp(tok, 10000))
	rs := tr.WatchScoreMany(ctxFor(t, 5*time.Second), []conn.MemberRead{{Key: sem.HoldersKey, Member: tok},
		{Key: sem.HoldersKey, Member: "nobody"}}, nil)
	if rs[0].Err != nil || !rs[0].Found || rs[1].Err != nil || rs[1].Found {
		t.Fatalf("WatchScoreMany = %+v", rs)
	}
	mustDo(t, tr, sem.ReleaseOp(tok))
	timeout := time.After(5 * time.Second)
	for {
		select {
		case keys := <-got:
			for _, g := range keys {
				if g == sem.HoldersKey {
					return
				}
			}
		case <-timeout:
			t.Fatal("no invalidation of the released permit's set")
		}
	}
}

func checkFenced(t *testing.T, tr conn.Transport) {
	k, counter := key(t, "{f}lease"), key(t, "{f}counter")
	a := mustDo(t, tr, conn.FencedAcquireOp(k, counter, token(t), 10000))
	if !a.Owned || a.FencingToken != 1 {
		t.Fatalf("first fenced = %+v", a)
	}
	if b := mustDo(t, tr, conn.FencedAcquireOp(k, counter, token(t), 10000)); b.Owned {
		t.Fatalf("second fenced while held = %+v", b)
	}
	if err := tr.CheckFencedKeys(k, counter); err != nil {
		t.Fatal(err)
	}
}

func checkDoneContext(t *testing.T, tr conn.Transport) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tr.Do(ctx, conn.AcquireOp(key(t, "c"), token(t), 1000), nil)
	if conn.ClassOf(err) != conn.NotSubmitted {
		t.Fatalf("done ctx: %v (%s)", err, classOf(err))
	}
}

func checkAbort(t *testing.T, tr conn.Transport) {
	r := &conn.Route{}
	r.Abort()
	_, err := tr.Do(ctxFor(t, 5*time.Second), conn.AcquireOp(key(t, "a"), token(t), 1000), r)
	if !errors.Is(err, conn.ErrAborted) || conn.ClassOf(err) != conn.NotSubmitted {
		t.Fatalf("aborted route: %v", err)
	}
}

func checkRetireAll(t *testing.T, tr conn.Transport) {
	s, err := tr.SessionForKey(ctxFor(t, 5*time.Second), key(t, "r"))
	if err != nil {
		t.Fatal(err)
	}
	tr.RetireAll()
	if !s.Retired() {
		t.Fatal("RetireAll left a session")
	}
	if !mustDo(t, tr, conn.AcquireOp(key(t, "r"), token(t), 1000)).Owned {
		t.Fatal("not usable after RetireAll")
	}
}

func checkWatch(t *testing.T, tr conn.Transport) {
	got := make(chan []string, 16)
	tr.SetInvalidationHandler(func(_ string, keys []string) { got <- keys })
	k := key(t, "w")
	tok := token(t)
	mustDo(t, tr, conn.AcquireOp(k, tok, 10000))
	_, owner, found, err := tr.WatchRead(ctxFor(t, 5*time.Second), k)
	if err != nil || !found || owner != tok {
		t.Fatalf("WatchRead = %q %v %v", owner, found, err)
	}
	mustDo(t, tr, conn.ReleaseOp(k, tok))
	timeout := time.After(5 * time.Second)
	for {
		select {
		case keys := <-got:
			for _, g := range keys {
				if g == k {
					return
				}
			}
		case <-timeout:
			t.Fatal("no invalidation of the released key")
		}
	}
}

func checkReplicated(t *testing.T, tr conn.Transport) {
	k, counter := key(t, "{r}lease"), key(t, "{r}counter")
	res, err := tr.AcquireReplicated(ctxFor(t, 5*time.Second), context.Background(), k, counter, token(t), 10000, 1, 10)
	if err != nil || !res.Acquired || res.FencingToken != 1 || res.WaitErr != nil || res.Acknowledged != 0 {
		t.Fatalf("AcquireReplicated = %+v, %v", res, err)
	}
}

func checkInvalidWait(t *testing.T, tr conn.Transport) {
	_, err := tr.AcquireReplicated(ctxFor(t, 5*time.Second), context.Background(), "a{x}", "b{x}", "t", 1000, 0, 10)
	if !errors.Is(err, conn.ErrInvalidWait) || conn.ClassOf(err) != conn.NotSubmitted {
		t.Fatalf("0 replicas: %v", err)
	}
}

func checkClose(t *testing.T, tr conn.Transport) {
	mustDo(t, tr, conn.AcquireOp(key(t, "c"), token(t), 1000))
	tr.Close()
	_, err := tr.Do(ctxFor(t, 5*time.Second), conn.AcquireOp(key(t, "c2"), token(t), 1000), nil)
	if !errors.Is(err, conn.ErrPoolClosed) || conn.ClassOf(err) != conn.NotSubmitted {
		t.Fatalf("after Close: %v", err)
	}
	tr.Close() // idempotent
}

// TestGoRedisConformance_SameAsPoolOnCluster runs the checks that hold on
// any topology on both transports over the real 3+3 cluster.
func TestGoRedisConformance_SameAsPoolOnCluster(t *testing.T) {
	onCluster := map[string]bool{"AcquireExtendReleaseOwner": true, "FenceKillsAndIsShared": true,
		"ExtendManyInOrder": true, "FencedAcquireCounts": true, "DoneContextIsNotSubmitted": true,
		"WatchReadIsPushed": true, "RetireAllKeepsServing": true, "ExtendManyCarriesHolderRenewals": true,
		"WatchScoreIsPushed": true}
	for _, c := range conformance {
		if !onCluster[c.name] {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			addrs, pw := realCluster(t)
			client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Password: pw, MaintNotificationsConfig: maintOff()})
			t.Cleanup(func() { _ = client.Close() })
			for name, tr := range map[string]conn.Transport{"rueidis": rueidisPool(t, addrs, pw), "goredis": newTransport(t, client)} {
				t.Run(name, func(t *testing.T) {
					if !tr.Cluster() {
						t.Fatal("not in cluster mode")
					}
					c.run(t, tr)
				})
			}
		})
	}
}

// TestGoRedisConformance_SameAsPoolOnSim runs every check on both
// transports over the sim server, each of its four profiles (their
// ladders differ: DELEX on Redis 8.4, SET IFEQ on 8.4 and Valkey, DELIFEQ
// on Valkey 9.0), through a fault proxy.
func TestGoRedisConformance_SameAsPoolOnSim(t *testing.T) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			for _, c := range conformance {
				t.Run(c.name, func(t *testing.T) {
					srv, err := sim.Start(context.Background(), sim.Config{Profile: profile, Password: "pw"})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = srv.Close() })
					p, err := faultproxy.Start(srv.Addr())
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = p.Close() })
					for name, tr := range map[string]conn.Transport{"rueidis": rueidisPool(t, []string{p.Addr()}, "pw"),
						"goredis": newTransport(t, goredisClient(t, p.Addr(), "pw"))} {
						t.Run(name, func(t *testing.T) { c.run(t, tr) })
					}
				})
			}
		})
	}
}
