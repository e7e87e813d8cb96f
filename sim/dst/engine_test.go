package dst

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
)

// sessionConn is the simulated connection that carries engine session s.
func sessionConn(t *testing.T, w *world, s conn.Session) *connection {
	t.Helper()
	id, ok := s.Identity()
	if !ok {
		t.Fatalf("session to %s has no identity", s.Node())
	}
	c := w.nodes[0].byID[id.ID]
	if c == nil {
		t.Fatalf("no simulated connection with CLIENT ID %d", id.ID)
	}
	return c
}

// TestOnlyProofIsNotSubmitted_TheEngineOverSimulatedConnectionsClassifiesAsItShips:
// the engine that ships, over the simulated client, tells the driver what
// it tells it over a real client — a command whose ctx ended before the
// write, or whose session was found dead first, is not submitted (the
// latter on a retired session, so a fresh one may send it, and
// Transport.Do does); one whose caller gave up after the write is
// uncertain and leaves the session in use; one written into a socket the
// server had closed is uncertain (io.EOF) and retires the session.
func TestOnlyProofIsNotSubmitted_TheEngineOverSimulatedConnectionsClassifiesAsItShips(t *testing.T) {
	w, p := quietWorld(t)
	tr := p.engine
	op := conn.AcquireOp("lock:1", "p1.1-x", 1000)
	inTask(w, p, func() {
		s, err := tr.SessionForKey(context.Background(), "lock:1")
		if err != nil {
			t.Fatalf("SessionForKey = %v", err)
		}
		done, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.Do(done, op, nil); conn.ClassOf(err) != conn.NotSubmitted {
			t.Errorf("ctx done before the write: %v; want not submitted", err)
		}
		ctx, giveUp := context.WithCancel(context.Background())
		p.clock.AfterFunc(time.Millisecond/2, giveUp) // the write takes 1ms to arrive
		if _, err := s.Do(ctx, op, nil); conn.ClassOf(err) != conn.Uncertain || s.Retired() {
			t.Errorf("caller gave up after the write: %v, retired %v; want uncertain, session kept", err, s.Retired())
		}
		w.serverClose(sessionConn(t, w, s))
		w.opt.NoticeDeadPercent = 100
		if _, err := s.Do(context.Background(), op, nil); !conn.RetriableOnFreshSession(err) || !s.Retired() {
			t.Errorf("session found dead before the write: %v; want not submitted on a retired session", err)
		}
		if _, err := tr.Do(context.Background(), conn.OwnerOp("lock:1"), nil); err != nil {
			t.Errorf("Transport.Do = %v; want an answer on a fresh session", err)
		}
		s, _ = tr.SessionForKey(context.Background(), "lock:1")
		w.serverClose(sessionConn(t, w, s))
		w.opt.NoticeDeadPercent = -1
		_, err = s.Do(context.Background(), conn.ReleaseOp("lock:1", "p1.1-x"), nil)
		if conn.ClassOf(err) != conn.Uncertain || !errors.Is(err, io.EOF) || !s.Retired() {
			t.Errorf("written into a socket the server closed: %v, retired %v; want uncertain (EOF), retired", err, s.Retired())
		}
	})
	if len(w.check.violations) != 0 {
		t.Fatalf("violations: %v", w.check.violations)
	}
}

// TestFenceIsFinal_TheEngineFencesOverSimulatedConnections: the engine's
// Fence kills the session with CLIENT KILL ID … ADDR … from its fence
// connection and retires it — the simulated server closes the victim and
// the checker records it fenced —; a second fence of it is answered at
// once (shared); a session whose identity the server refused is not
// fenced (ErrNoIdentity).
func TestFenceIsFinal_TheEngineFencesOverSimulatedConnections(t *testing.T) {
	w, p := quietWorld(t)
	tr := p.engine
	inTask(w, p, func() {
		s, err := tr.SessionForKey(context.Background(), "lock:1")
		if err != nil {
			t.Fatalf("SessionForKey = %v", err)
		}
		victim := sessionConn(t, w, s)
		if err := tr.Fence(context.Background(), s); err != nil || !s.Retired() {
			t.Fatalf("Fence = %v, retired %v; want nil, retired", err, s.Retired())
		}
		if !victim.gone() || !w.check.fenced[fenceKey{0, victim.generation, victim.clientID}] {
			t.Error("the fenced session's connection is not closed on the server, or not recorded fenced")
		}
		kills := w.stats.Fences
		if err := tr.Fence(context.Background(), s); err != nil || w.stats.Fences != kills {
			t.Errorf("second Fence = %v with %d more kills; want nil, shared", err, w.stats.Fences-kills)
		}
		w.nodes[0].denyACL(w, "client")
		bare, err := tr.SessionForKey(context.Background(), "lock:1")
		if err != nil {
			t.Fatalf("SessionForKey without CLIENT = %v", err)
		}
		if err := tr.Fence(context.Background(), bare); !errors.Is(err, conn.ErrNoIdentity) {
			t.Errorf("Fence without identity = %v; want ErrNoIdentity", err)
		}
	})
	if len(w.check.violations) != 0 {
		t.Fatalf("violations: %v", w.check.violations)
	}
}

// TestPushDetectsLoss_TheEngineReadsMembersOverSimulatedListeners: the
// engine's WatchScoreMany over the simulated client's listener — per read
// CLIENT CACHING YES + ZSCORE on the node's watcher, Found when the member
// is in the set, Token empty — and the set's next change reaches the
// invalidation handler, so waiting permits and readers are woken by push;
// both ways a client listens.
func TestPushDetectsLoss_TheEngineReadsMembersOverSimulatedListeners(t *testing.T) {
	for _, redirect := range []bool{false, true} {
		opt := Options{Seed: 1, Processes: 1, Horizon: time.Nanosecond, Primitives: true, ListenRedirect: redirect,
			LatencyMin: time.Millisecond, LatencyMax: time.Millisecond}.withDefaults()
		w := newWorld(opt)
		p, tr := w.procs[0], w.procs[0].engine
		sem, err := conn.NewSemaphore("", "s1", 2)
		if err != nil {
			t.Fatal(err)
		}
		var invalidated []string
		tr.SetInvalidationHandler(func(_ string, keys []string) { invalidated = append(invalidated, keys...) })
		var got []conn.WatchReadResult
		inTask(w, p, func() {
			ctx := context.Background()
			if res, err := tr.Do(ctx, sem.AcquireOp("p1.1-x", 1000), nil); err != nil || !res.Owned {
				t.Errorf("permit acquisition = %+v, %v; want owned", res, err)
			}
			got = tr.WatchScoreMany(ctx, []conn.MemberRead{{Key: sem.HoldersKey, Member: "p1.1-x"},
				{Key: sem.HoldersKey, Member: "p1.2-y"}}, nil)
			if res, err := tr.Do(ctx, sem.AcquireOp("p1.2-y", 1000), nil); err != nil || !res.Owned {
				t.Errorf("second permit acquisition = %+v, %v; want owned", res, err)
			}
			ctx, stop := context.WithCancel(ctx)
			p.clock.AfterFunc(20*time.Millisecond, stop)
			_ = p.spawn.Wait(ctx, nil) // the invalidation travels
		})
		want := []conn.WatchReadResult{{Node: w.nodes[0].addr, Found: true}, {Node: w.nodes[0].addr}}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("redirect %v: WatchScoreMany = %+v; want %+v", redirect, got, want)
		}
		if len(invalidated) != 1 || invalidated[0] != sem.HoldersKey {
			t.Fatalf("redirect %v: invalidations after the set changed: %v; want [%s]", redirect, invalidated, sem.HoldersKey)
		}
		if w.stats.MemberWatchReads != 2 || len(w.check.violations) != 0 {
			t.Fatalf("redirect %v: %d member reads on the wire, violations %v", redirect, w.stats.MemberWatchReads,
				w.check.violations)
		}
	}
}
