package dst

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
)

// quietWorld is a world with one process and no workload (its horizon has
// passed), push off, for tests of the simulated transport alone.
func quietWorld(t *testing.T) (*world, *process) {
	t.Helper()
	opt := Options{Seed: 1, Processes: 1, Horizon: time.Nanosecond, WithoutPush: true,
		LatencyMin: time.Millisecond, LatencyMax: time.Millisecond}.withDefaults()
	w := newWorld(opt)
	return w, w.procs[0]
}

// inTask runs f as a task of p and steps w until nothing is pending.
func inTask(w *world, p *process, f func()) {
	p.spawn.Go(f)
	for w.step() {
	}
	w.stopTasks()
}

// TestOnlyProofIsNotSubmitted_TheSimulatedTransportClassifiesAsConn: the
// simulated transport tells the driver what conn over rueidis does — a
// command whose ctx ended before the write, or whose session was found
// dead first, is not submitted (the latter on a retired session, so a
// fresh one may send it, and Transport.Do does); one whose caller gave up
// after the write is uncertain and leaves the session in use; one written
// into a socket the server had closed is uncertain (io.EOF) and retires
// the session.
func TestOnlyProofIsNotSubmitted_TheSimulatedTransportClassifiesAsConn(t *testing.T) {
	w, p := quietWorld(t)
	tr := p.transport
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
		w.serverClose(s.(*simSession).conn)
		w.opt.NoticeDeadPercent = 100
		if _, err := s.Do(context.Background(), op, nil); !conn.RetriableOnFreshSession(err) || !s.Retired() {
			t.Errorf("session found dead before the write: %v; want not submitted on a retired session", err)
		}
		if _, err := tr.Do(context.Background(), conn.OwnerOp("lock:1"), nil); err != nil {
			t.Errorf("Transport.Do = %v; want an answer on a fresh session", err)
		}
		s, _ = tr.SessionForKey(context.Background(), "lock:1")
		w.serverClose(s.(*simSession).conn)
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

// TestFenceIsFinal_TheSimulatedFenceKillsAndIsShared: Transport.Fence
// kills the session with CLIENT KILL ID … ADDR … from the control
// connection and retires it; a second fence of it is answered at once
// (shared); a session without identity is not fenced (ErrNoIdentity).
func TestFenceIsFinal_TheSimulatedFenceKillsAndIsShared(t *testing.T) {
	w, p := quietWorld(t)
	tr := p.transport
	inTask(w, p, func() {
		s, err := tr.SessionForKey(context.Background(), "lock:1")
		if err != nil {
			t.Fatalf("SessionForKey = %v", err)
		}
		if err := tr.Fence(context.Background(), s); err != nil || !s.Retired() {
			t.Fatalf("Fence = %v, retired %v; want nil, retired", err, s.Retired())
		}
		if c := s.(*simSession).conn; !c.gone() || !w.check.fenced[fenceKey{0, c.generation, c.clientID}] {
			t.Error("the fenced session's connection is not closed on the server, or not recorded fenced")
		}
		kills := w.stats.Fences
		if err := tr.Fence(context.Background(), s); err != nil || w.stats.Fences != kills {
			t.Errorf("second Fence = %v with %d more kills; want nil, shared", err, w.stats.Fences-kills)
		}
		bare := &simSession{t: tr, node: w.nodes[0], conn: s.(*simSession).conn}
		if err := tr.Fence(context.Background(), bare); !errors.Is(err, conn.ErrNoIdentity) {
			t.Errorf("Fence without identity = %v; want ErrNoIdentity", err)
		}
	})
}

// TestPushDetectsLoss_TheSimulatedWatcherReadsMembers: the simulated
// transport's WatchScoreMany does what conn.Pool's does — per read CLIENT
// CACHING YES + ZSCORE on the node's watcher, Found when the member is in
// the set, Token empty — and the set's next change reaches the
// invalidation handler, so waiting permits and readers are woken by push.
func TestPushDetectsLoss_TheSimulatedWatcherReadsMembers(t *testing.T) {
	opt := Options{Seed: 1, Processes: 1, Horizon: time.Nanosecond, Primitives: true,
		LatencyMin: time.Millisecond, LatencyMax: time.Millisecond}.withDefaults()
	w := newWorld(opt)
	p, tr := w.procs[0], w.procs[0].transport
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
	})
	want := []conn.WatchReadResult{{Node: w.nodes[0].addr, Found: true}, {Node: w.nodes[0].addr}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("WatchScoreMany = %+v; want %+v", got, want)
	}
	if len(invalidated) != 1 || invalidated[0] != sem.HoldersKey {
		t.Fatalf("invalidations after the set changed: %v; want [%s]", invalidated, sem.HoldersKey)
	}
	if len(w.check.violations) != 0 {
		t.Fatalf("violations: %v", w.check.violations)
	}
}
