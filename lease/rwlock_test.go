package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// Goal: readers share the lock, a writer excludes them and every other
// writer, each hold a *Lock; a refused hold is not an error (RLock's and
// Lock's ErrNotAcquired); Readers counts the live readers.
func TestRWLockWriterPreferring_HoldsAreHeldLocks(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		locks := tg.locks(t)
		ctx := ctxT(t)
		rw := locks.RWLock(primName(t, "rw"))
		r1, err := rw.RLock(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := rw.RLock(ctx, 10*time.Second, WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		if n, err := rw.Readers(ctx); err != nil || n != 2 {
			t.Fatalf("Readers = %d, %v; want 2", n, err)
		}
		if got := r1.Key(); got != "{"+rw.Name()+"}:r" {
			t.Fatalf("a read hold's Key = %q; want {name}:r", got)
		}
		for _, r := range []*Lock{r1, r2} {
			if _, err := r.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		w, err := rw.Lock(ctx, 10*time.Second, WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		if got := w.Key(); got != "{"+rw.Name()+"}:w" {
			t.Fatalf("a write hold's Key = %q; want {name}:w", got)
		}
		if _, err := rw.RLock(ctx, 10*time.Second); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("RLock while a writer holds = %v; want ErrNotAcquired", err)
		}
		if att, err := rw.TryLock(ctx, 10*time.Second); err != nil || att.Acquired() {
			t.Fatalf("a second writer = %v, %v; want refused", att.Acquired(), err)
		}
		if held, err := w.VerifyStillHeld(ctx); err != nil || !held {
			t.Fatalf("VerifyStillHeld = %v, %v", held, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r3, err := rw.RLock(ctx, 10*time.Second)
		if err != nil {
			t.Fatalf("RLock after the writer left: %v", err)
		}
		_ = r3.Close()
	})
}

// writeTries counts the write acquisitions of key the server received.
func writeTries(srv wireServer, key string) int { return len(writeTokens(srv, key)) }

// writeTokens returns the owner tokens of the write-acquire scripts srv ran
// on the writer key key, in order.
func writeTokens(srv wireServer, key string) []string {
	var tokens []string
	for _, e := range srv.Log() {
		if isScript(conn.WriteAcquireScriptSHA, conn.WriteAcquireScript, key, "")(e) {
			tokens = append(tokens, e.Args[5])
		}
	}
	return tokens
}

// Goal, on virtual time (the server's clock and the driver's): a writer
// that finds a reader waits with its marker, each try refreshing it with
// the same token, so that long past the marker's own lease no new reader
// gets in; the try after the reader's release takes the lock (not one
// marker lease later). A writer that gives up deletes its marker at once:
// a reader gets in with no time passed.
func TestRWLockWaitingMarkerExpires_TheWaitingWriterRefreshesItAndDeletesIt(t *testing.T) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			server := sim.NewManualClock(time.Unix(1_700_000_000, 0))
			srv := startSim(t, sim.Config{Profile: profile, Clock: server})
			locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), WithoutPush())
			clock := &actor.ManualClock{}
			useClock(locks, clock)
			readers := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), WithoutPush())
			ctx := ctxT(t)
			rw, other := locks.RWLock("m"), readers.RWLock("m")
			reader, err := other.RLock(ctx, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			const every = 100 * time.Millisecond // the marker's lease: 3·every + 1 s
			got := make(chan acquired, 1)
			go func() {
				lock, err := rw.Lock(ctx, time.Minute, WithWait(time.Minute), WithRetryEvery(every))
				got <- acquired{lock: lock, err: err}
			}()
			step := func(tries int) {
				t.Helper()
				eventually(t, "the writer's next try, then its sleep", func() bool {
					return writeTries(srv, "{m}:w") >= tries && clock.Pending() == 1
				})
				clock.Advance(every)
				server.Advance(every)
			}
			for try := 1; try <= 20; try++ { // 2 s: past the 1.3 s marker lease but for the refreshes
				step(try)
			}
			if att, err := other.TryRLock(ctx, time.Minute); err != nil || att.Acquired() {
				t.Fatalf("a reader 2 s into the wait = %v, %v; want refused by the refreshed marker", att.Acquired(), err)
			}
			if _, err := reader.Release(ctx); err != nil {
				t.Fatal(err)
			}
			// The next try may already have found the readers gone and acquired
			// (no sleep follows), or found the reader and sleeps.
			eventually(t, "the writer's next try, then its sleep or its lock", func() bool {
				return len(got) == 1 || (writeTries(srv, "{m}:w") >= 21 && clock.Pending() == 1)
			})
			if len(got) == 0 {
				clock.Advance(every)
				server.Advance(every)
			}
			r := <-got
			if r.err != nil {
				t.Fatalf("the writer, the try after the last reader left: %v", r.err)
			}
			_ = r.lock.Close()

			reader, err = other.RLock(ctx, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			if att, err := rw.TryLock(ctx, time.Minute); err != nil || att.Acquired() {
				t.Fatalf("TryLock with a reader in = %v, %v; want refused", att.Acquired(), err)
			}
			eventually(t, "the given-up writer's marker deleted", func() bool { return srv.Exec("EXISTS", "{m}:w") == ":0\r\n" })
			if att, err := other.TryRLock(ctx, time.Minute); err != nil || !att.Acquired() {
				t.Fatalf("a reader after the writer gave up = %v, %v; want admitted at once", att.Acquired(), err)
			} else {
				_ = att.Close()
			}
		})
	}
}

// Goal: readers that keep coming — each one's hold overlapping the next,
// so that without writer preference some reader would always be in — do
// not starve a writer: once its marker is on the server no new reader is
// admitted (each of the 4 reader goroutines may still count the one
// admission its RLock had won before: the count lags the server), so it
// gets the lock once the holds in progress end; no reader is live while it
// holds, and readers come back once it leaves (every sim profile and the
// real server, with push). Counted in admissions, not in time: on a loaded
// machine a hold of 40 ms lasts much longer.
func TestRWLockWriterPreferring_ChurningReadersDoNotStarveAWriter(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		readerLocks, writerLocks := tg.locks(t), tg.locks(t)
		name := primName(t, "churn")
		ctx, stop := context.WithCancel(ctxT(t))
		defer stop()
		var admitted atomic.Int64
		var writing atomic.Bool
		var overlap atomic.Bool
		var wg sync.WaitGroup
		const hold, readers = 40 * time.Millisecond, 4
		for i := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sleepCtx(ctx, time.Duration(i)*hold/4) // staggered: a reader is always in
				for ctx.Err() == nil {
					r, err := readerLocks.RWLock(name).RLock(ctx, 5*time.Second, WithWaitUntilDone(), WithRetryEvery(5*time.Millisecond))
					if err != nil {
						return
					}
					admitted.Add(1)
					if writing.Load() {
						overlap.Store(true)
					}
					sleepCtx(ctx, hold)
					_, _ = r.Release(context.Background())
				}
			}()
		}
		eventually(t, "readers churning", func() bool { return admitted.Load() > 8 })
		atMarker := make(chan int64, 1) // the admissions counted when the writer's key was first seen
		go func() {
			for tg.srv.Exec("EXISTS", "{"+name+"}:w") != ":1\r\n" && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			atMarker <- admitted.Load()
		}()
		start := time.Now()
		w, err := writerLocks.RWLock(name).Lock(ctx, 5*time.Second, WithWait(5*time.Second))
		if err != nil {
			t.Fatalf("the writer among churning readers: %v", err)
		}
		waited := time.Since(start)
		admittedWhileWaiting := admitted.Load() - <-atMarker
		writing.Store(true)
		if n, err := writerLocks.RWLock(name).Readers(ctx); err != nil || n != 0 {
			t.Fatalf("Readers while the writer holds = %d, %v; want 0", n, err)
		}
		before := admitted.Load()
		sleepCtx(ctx, 3*hold)
		writing.Store(false)
		if _, err := w.Release(ctx); err != nil {
			t.Fatal(err)
		}
		eventually(t, "readers back after the writer", func() bool { return admitted.Load() > before })
		stop()
		wg.Wait()
		if overlap.Load() {
			t.Fatal("a reader was admitted while the writer held the lock")
		}
		if admittedWhileWaiting > readers {
			t.Fatalf("%d readers admitted after the writer's marker was on the server (the writer waited %v among readers holding %v each); want at most %d, one per reader already admitted",
				admittedWhileWaiting, waited, hold, readers)
		}
		t.Logf("the writer waited %v; %d readers admitted after its marker", waited, admittedWhileWaiting)
	})
}

// Goal: a writer's try whose reply came after its lease could have expired
// (so the handle abandoned it and deletes what it took) is followed by a
// try with a fresh token, never the same one: a try with the same token
// could take the lock before that clean-up ran and have it deleted under
// it. (Found by the chaos campaign: a reused token's hold deleted twice.)
func TestRWLockWaitingMarkerExpires_ATooLateTryGetsAFreshToken(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey81})
	srv.Exec("SCRIPT", "LOAD", conn.WriteAcquireScript)
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), WithoutPush())
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	readers := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), WithoutPush())
	ctx := ctxT(t)
	reader, err := readers.RWLock("late").RLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int32
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Gate: gate, Match: func(args []string) bool {
		return len(args) > 1 && args[1] == conn.WriteAcquireScriptSHA && writes.Add(1) == 2
	}})
	const every = 100 * time.Millisecond
	got := make(chan acquired, 1)
	go func() {
		lock, err := locks.RWLock("late").Lock(ctx, time.Second, WithWait(time.Minute), WithRetryEvery(every))
		got <- acquired{lock: lock, err: err}
	}()
	triesSent := func() []string { return writeTokens(srv, "{late}:w") }
	tokenOf := func(try int) string {
		t.Helper()
		var tokens []string
		eventually(t, "the writer's try", func() bool { tokens = triesSent(); return len(tokens) >= try })
		return tokens[try-1]
	}
	first := tokenOf(1) // waiting: the reader is in
	eventually(t, "the writer's sleep", func() bool { return clock.Pending() == 1 })
	if _, err := reader.Release(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(every)
	if late := tokenOf(2); late != first {
		t.Fatalf("the try after \"waiting\" used another token; want the marker's")
	}
	clock.Advance(2 * time.Second) // the held reply will come after the 1 s lease could have expired
	close(gate)
	// The clock moves one retry interval at a time, and then stands while a
	// try it sent is on the wire (up to a second of real time each: a timer
	// is pending during a try too, and moving the clock on under the fresh
	// try's round trip would make that one too late as well).
	var r acquired
	for step := 0; ; step++ {
		eventually(t, "the writer's sleep or its end", func() bool { return clock.Pending() == 1 || len(got) == 1 })
		if len(got) == 1 {
			r = <-got
			break
		}
		if step > 50 {
			t.Fatal("the writer never got the lock")
		}
		sent := len(triesSent())
		clock.Advance(every)
		within(time.Second, func() bool { return len(got) == 1 || len(triesSent()) > sent })
		if len(triesSent()) > sent {
			within(time.Second, func() bool { return len(got) == 1 })
		}
	}
	if r.err != nil {
		t.Fatalf("the writer: %v", r.err)
	}
	defer r.lock.Close()
	if next := tokenOf(3); next == first {
		t.Fatal("the try after a too-late one reused its token")
	}
	if r.lock.Token().wire() == first {
		t.Fatal("the writer holds the lock under the too-late try's token")
	}
	if held, err := r.lock.VerifyStillHeld(ctx); err != nil || !held {
		t.Fatalf("the writer's lock on the server: %v, %v", held, err)
	}
}

// Goal: a waiting writer's try whose reply was lost (the connection closed
// after the script ran) is fenced and settled "not ours" (the writer key
// holds its marker); nothing of it is in flight any more, so the next try
// keeps its token and refreshes that marker: the marker is never deleted
// while the writer waits, and no reader slips in.
func TestRWLockWaitingMarkerExpires_ASettledTryKeepsItsMarker(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Redis70})
	srv.Exec("SCRIPT", "LOAD", conn.WriteAcquireScript)
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), WithoutPush())
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	readers := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), WithoutPush())
	ctx := ctxT(t)
	reader, err := readers.RWLock("kept").RLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	var writes atomic.Int32
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Match: func(args []string) bool {
		return len(args) > 1 && args[1] == conn.WriteAcquireScriptSHA && writes.Add(1) == 2
	}})
	const every = 100 * time.Millisecond
	wctx, cancel := context.WithCancel(ctx)
	got := make(chan acquired, 1)
	go func() {
		lock, err := locks.RWLock("kept").Lock(wctx, time.Second, WithWait(time.Minute), WithRetryEvery(every))
		got <- acquired{lock: lock, err: err}
	}()
	tries := func() []string { return writeTokens(srv, "{kept}:w") }
	// readBack reports whether the settling of the second try has read the
	// writer key (its fence and its read are bounded by timers of the
	// clock, which must not be moved past their bounds meanwhile).
	readBack := func() bool {
		seen := 0
		for _, e := range srv.Log() {
			if isScript(conn.WriteAcquireScriptSHA, conn.WriteAcquireScript, "{kept}:w", "")(e) {
				seen++
			}
			if seen >= 2 && strings.EqualFold(e.Args[0], "GET") && len(e.Args) == 2 && e.Args[1] == "{kept}:w" {
				return true
			}
		}
		return false
	}
	// next moves the clock on in small steps, while something sleeps on
	// it, until the writer's try number want has arrived.
	next := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for n := len(tries()); n < want; n = len(tries()) {
			if time.Now().After(deadline) {
				t.Fatalf("the writer's try %d never came", want)
			}
			if clock.Pending() > 0 && (n < 2 || readBack()) {
				clock.Advance(every / 4)
			}
			time.Sleep(time.Millisecond)
		}
	}
	next(3)
	tokens := tries()
	if tokens[1] != tokens[0] || tokens[2] != tokens[0] {
		t.Fatal("a try after the settled one used another token; want the marker's")
	}
	if got := srv.Exec("GET", "{kept}:w"); got != fmt.Sprintf("$%d\r\nwaiting:%s\r\n", len("waiting:")+len(tokens[0]), tokens[0]) {
		t.Fatalf("the writer key after the settled try: %q; want the writer's marker", got)
	}
	if att, err := readers.RWLock("kept").TryRLock(ctx, time.Minute); err != nil || att.Acquired() {
		t.Fatalf("a new reader while the writer waits: %v, %v; want refused", att.Acquired(), err)
	}
	cancel()
	if r := <-got; r.err == nil {
		r.lock.Close()
		t.Fatal("the writer got the lock while the reader held it")
	}
}

// within polls cond for up to d of real time and reports whether it held.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
