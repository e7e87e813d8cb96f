package conn_test

import (
	"fmt"
	. "github.com/respire-go/respire/conn"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// fairTry runs one fair try and returns its result.
func fairTry(t *testing.T, s primServer, r FairResource, token string, waiterMillis int64) Result {
	t.Helper()
	return mustDo(t, s.pool, r.TryOp(token, 60000, waiterMillis, false))
}

// Goal: waiters queued behind a holder are granted in ticket order, each
// grant a reservation that no other acquisition — a later fair waiter, a
// single fair try, a non-fair SET NX — can take, and the head's position
// is 1; a release hands the key straight to the head (rule
// FairGrantsInTicketOrder).
func TestFairGrantsInTicketOrder_MutexScripts(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			key := s.prefix + "job"
			r, err := FairMutex(key)
			if err != nil {
				t.Fatal(err)
			}
			if res := fairTry(t, s, r, "h", 5000); !res.Owned {
				t.Fatalf("first try on a free key = %+v; want held", res)
			}
			for i, tok := range []string{"a", "b", "c"} {
				res := fairTry(t, s, r, tok, 5000)
				if res.Owned || !res.Waiting || res.Holders != int64(i+1) {
					t.Fatalf("try of %s behind h = %+v; want queued at %d", tok, res, i+1)
				}
			}
			if res := fairTry(t, s, r, "b", 5000); res.Holders != 2 {
				t.Fatalf("b's second try = %+v; want its place kept (2)", res)
			}
			if res := mustDo(t, s.pool, r.ReleaseOp("h")); !res.Owned {
				t.Fatalf("h's release = %+v; want released", res)
			}
			if got := s.exec("GET", key); got != "fair:a" {
				t.Fatalf("key after h's release = %q; want reserved for a", got)
			}
			if got := s.exec("SET", key, "u", "NX", "PX", "60000"); got != "<nil>" {
				t.Fatalf("non-fair SET NX during the hand-off = %q; want refused", got)
			}
			if res := mustDo(t, s.pool, r.TryOp("x", 60000, 5000, true)); res.Owned {
				t.Fatalf("single fair try during the hand-off = %+v; want refused", res)
			}
			if res := fairTry(t, s, r, "c", 5000); res.Owned || res.Holders != 2 {
				t.Fatalf("c's try while a is granted = %+v; want queued at 2 (behind b)", res)
			}
			if res := fairTry(t, s, r, "a", 5000); !res.Owned {
				t.Fatalf("a's try after the grant = %+v; want held", res)
			}
			if got := s.exec("GET", key); got != "a" {
				t.Fatalf("key after a's claim = %q; want a", got)
			}
			if n := mustDo(t, s.pool, r.WaitersOp()).Holders; n != 2 {
				t.Fatalf("waiters = %d; want 2 (b, c)", n)
			}
			mustDo(t, s.pool, r.ReleaseOp("a"))
			mustDo(t, s.pool, r.ReleaseOp("b")) // b gives up while granted: its turn goes to c
			if got := s.exec("GET", key); got != "fair:c" {
				t.Fatalf("key after b gave up its grant = %q; want reserved for c", got)
			}
			if res := mustDo(t, s.pool, r.RenewOp("c", 5000)); !res.Waiting {
				t.Fatalf("c's renewal while granted = %+v; want try now", res)
			}
			if res := fairTry(t, s, r, "c", 5000); !res.Owned {
				t.Fatalf("c's try = %+v; want held", res)
			}
			mustDo(t, s.pool, r.ReleaseOp("c"))
			for _, k := range []string{key, r.Queue().QueueKey, r.Queue().LeasesKey} {
				if got := s.exec("EXISTS", k); got != ":0" {
					t.Fatalf("EXISTS %s after the last release = %s; want 0 (nothing left)", k, got)
				}
			}
		})
	}
}

// Goal: a waiter whose waiter lease ends is dropped from the queue by the
// next script and its place goes to the one behind it; a granted waiter
// that does not claim within its waiter lease loses its turn (the key
// ends, and the next script grants it to the next waiter) (rule
// FairDeadWaiterCostsItsWaiterLease). The sim servers run on a virtual
// clock (their TIME, which the scripts prune by, moves only when the test
// says); the real server's time cannot be held, so there the steps that
// need a waiter lease not yet ended are checked only when they ran within
// it, and redone on fresh keys when a loaded machine took longer.
func TestFairDeadWaiterCostsItsWaiterLease_MutexScripts(t *testing.T) {
	for _, s := range clockedServers(t) {
		t.Run(s.name, func(t *testing.T) {
			for attempt := 1; ; attempt++ {
				if deadWaiterScenario(t, s, fmt.Sprintf("job%d", attempt)) {
					return
				}
				if attempt == 20 {
					t.Skip("the machine never ran the steps within a waiter lease of 200 ms; the sim servers check the rule on their virtual clock")
				}
			}
		})
	}
}

// deadWaiterScenario runs the dead-waiter steps on key name; false when a
// step that needs a live waiter lease ran too late on real time.
func deadWaiterScenario(t *testing.T, s clockedServer, name string) bool {
	const short = 200 // ms
	key := s.prefix + name
	r, _ := FairMutex(key)
	fairTry(t, s.primServer, r, "h", 5000)
	fairTry(t, s.primServer, r, "dead", short)
	fairTry(t, s.primServer, r, "b", 60000)
	s.advance(2 * short * time.Millisecond)
	if res := mustDo(t, s.pool, r.RenewOp("b", 60000)); !res.Owned || res.Holders != 1 {
		t.Fatalf("b's renewal after the dead waiter's lease ended = %+v; want queued at 1", res)
	}
	if res := mustDo(t, s.pool, r.RenewOp("dead", short)); res.Owned || res.Waiting {
		t.Fatalf("the dead waiter's late renewal = %+v; want not queued", res)
	}
	lateQueued := time.Now()
	fairTry(t, s.primServer, r, "late", short)
	fairTry(t, s.primServer, r, "c", 60000)
	mustDo(t, s.pool, r.ReleaseOp("h")) // granted to b
	mustDo(t, s.pool, r.ReleaseOp("b")) // b leaves without claiming: late is granted, never claims
	got := s.exec("GET", key)
	if !s.virtual && time.Since(lateQueued) >= short*time.Millisecond {
		return false // late's waiter lease may have ended before its grant
	}
	if got != "fair:late" {
		t.Fatalf("key = %q; want reserved for late", got)
	}
	s.advance(2 * short * time.Millisecond)
	if res := mustDo(t, s.pool, r.RenewOp("c", 60000)); !res.Waiting {
		t.Fatalf("c's renewal after late's grant ended = %+v; want granted", res)
	}
	if res := fairTry(t, s.primServer, r, "late", short); !res.Waiting || res.Holders != 1 {
		t.Fatalf("late's try after its grant ended = %+v; want queued again, at the back (1: alone)", res)
	}
	return true
}

// Goal: a semaphore's free permits go to the first limit − live waiters,
// in ticket order, never more than the limit are live or reserved, and a
// fair release hands its permit to the next waiter at once (rule
// FairGrantsInTicketOrder).
func TestFairGrantsInTicketOrder_SemaphoreScripts(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			sem := mustSemaphore(t, s.prefix, "pool", 2)
			r := sem.Fair()
			for _, tok := range []string{"h1", "h2"} {
				if res := fairTry(t, s, r, tok, 5000); !res.Owned {
					t.Fatalf("%s = %+v; want a permit", tok, res)
				}
			}
			for i, tok := range []string{"a", "b", "c"} {
				if res := fairTry(t, s, r, tok, 5000); res.Holders != int64(i+1) {
					t.Fatalf("%s = %+v; want queued at %d", tok, res, i+1)
				}
			}
			mustDo(t, s.pool, r.ReleaseOp("h1"))
			mustDo(t, s.pool, r.ReleaseOp("h2"))
			if res := mustDo(t, s.pool, sem.AcquireOp("u", 60000)); res.Owned {
				t.Fatal("a non-fair permit was taken while both free permits were reserved")
			}
			if got := mustDo(t, s.pool, sem.HoldersOp()).Holders; got != 2 {
				t.Fatalf("live permits and reservations = %d; want 2", got)
			}
			if res := fairTry(t, s, r, "c", 5000); res.Holders != 1 {
				t.Fatalf("c = %+v; want queued at 1", res)
			}
			for _, tok := range []string{"b", "a"} {
				if res := fairTry(t, s, r, tok, 5000); !res.Owned {
					t.Fatalf("%s = %+v; want its reserved permit", tok, res)
				}
			}
		})
	}
}

// Goal: a read/write lock's queue is served in ticket order: readers at
// the head together, a writer behind them alone once they left, then the
// readers behind it (rule FairGrantsInTicketOrder).
func TestFairGrantsInTicketOrder_RWLockScripts(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			rw := mustRWLock(t, s.prefix, "doc")
			rd, wr := rw.Fair(false), rw.Fair(true)
			if res := fairTry(t, s, wr, "w0", 5000); !res.Owned {
				t.Fatalf("w0 = %+v; want the write hold", res)
			}
			order := []struct {
				tok string
				r   FairResource
			}{{"r1", rd}, {"r2", rd}, {"w1", wr}, {"r3", rd}}
			for i, o := range order {
				if res := fairTry(t, s, o.r, o.tok, 5000); res.Holders != int64(i+1) {
					t.Fatalf("%s = %+v; want queued at %d", o.tok, res, i+1)
				}
			}
			mustDo(t, s.pool, wr.ReleaseOp("w0"))
			for _, tok := range []string{"r1", "r2"} {
				if res := fairTry(t, s, rd, tok, 5000); !res.Owned {
					t.Fatalf("%s after w0 left = %+v; want a read hold", tok, res)
				}
			}
			if res := fairTry(t, s, rd, "r3", 5000); res.Owned || res.Holders != 2 {
				t.Fatalf("r3 behind the waiting writer = %+v; want queued at 2", res)
			}
			if got := s.exec("GET", rw.WriterKey); got != "waiting:w1" {
				t.Fatalf("writer key = %q; want w1's waiting marker", got)
			}
			mustDo(t, s.pool, rd.ReleaseOp("r1"))
			if res := fairTry(t, s, wr, "w1", 5000); res.Owned {
				t.Fatal("w1 got the write hold while r2 reads")
			}
			mustDo(t, s.pool, rd.ReleaseOp("r2"))
			if res := fairTry(t, s, wr, "w1", 5000); !res.Owned {
				t.Fatalf("w1 after the readers left = %+v; want the write hold", res)
			}
			mustDo(t, s.pool, wr.ReleaseOp("w1"))
			if res := fairTry(t, s, rd, "r3", 5000); !res.Owned {
				t.Fatalf("r3 after w1 left = %+v; want a read hold", res)
			}
		})
	}
}

// Goal: a mutex's queue keys hash to the key's slot, whatever the key's
// braces, and a key that cannot have its queue there is refused before
// anything is sent.
func TestFairQueueSharesTheKeysSlot(t *testing.T) {
	for _, key := range []string{"job", "p:job:7", "user:{42}:lock", "{x}", "a{b", "a{b}{c}"} {
		q, err := FairMutexQueue(key)
		if err != nil {
			t.Fatalf("FairMutexQueue(%q) = %v", key, err)
		}
		for _, k := range []string{q.QueueKey, q.LeasesKey} {
			if sim.Slot(k) != sim.Slot(key) {
				t.Errorf("queue key %q of %q: slot %d; want %d", k, key, sim.Slot(k), sim.Slot(key))
			}
		}
	}
	for _, key := range []string{"a}b", "a{}b", "{}", "{}x{y}"} {
		if _, err := FairMutexQueue(key); err != ErrFairKey {
			t.Errorf("FairMutexQueue(%q) = %v; want ErrFairKey", key, err)
		}
	}
}

// Goal: a run of readers at the head longer than one read of the queue's
// front is granted whole when the writer leaves, and stops at the writer
// behind it, which leaves its waiting marker once its turn comes (rule
// FairGrantsInTicketOrder).
func TestFairGrantsInTicketOrder_ARunOfReadersLongerThanOneReadOfTheFront(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			rw := mustRWLock(t, s.prefix, "long-run")
			rd, wr := rw.Fair(false), rw.Fair(true)
			if res := fairTry(t, s, wr, "w0", 5000); !res.Owned {
				t.Fatalf("w0 = %+v; want the write hold", res)
			}
			const readers = 20
			for i := range readers {
				if res := fairTry(t, s, rd, fmt.Sprintf("r%d", i), 5000); res.Holders != int64(i+1) {
					t.Fatalf("r%d = %+v; want queued at %d", i, res, i+1)
				}
			}
			if res := fairTry(t, s, wr, "w1", 5000); res.Holders != readers+1 {
				t.Fatalf("w1 = %+v; want queued at %d", res, readers+1)
			}
			if res := fairTry(t, s, rd, "late", 5000); res.Holders != readers+2 {
				t.Fatalf("late = %+v; want queued at %d", res, readers+2)
			}
			mustDo(t, s.pool, wr.ReleaseOp("w0"))
			if got := s.exec("ZCARD", rw.ReadersKey); got != fmt.Sprintf(":%d", readers) {
				t.Fatalf("readers reserved after w0 left = %s; want %d", got, readers)
			}
			if res := mustDo(t, s.pool, rd.RenewOp("late", 5000)); res.Holders != 2 {
				t.Fatalf("late's renewal = %+v; want queued at 2, behind w1", res)
			}
			if got := s.exec("GET", rw.WriterKey); got != "waiting:w1" {
				t.Fatalf("writer key = %q; want w1's waiting marker (w1 at the head, readers live)", got)
			}
			for i := range readers {
				if res := fairTry(t, s, rd, fmt.Sprintf("r%d", i), 5000); !res.Owned {
					t.Fatalf("r%d's claim = %+v; want a read hold", i, res)
				}
				mustDo(t, s.pool, rd.ReleaseOp(fmt.Sprintf("r%d", i)))
			}
			if got := s.exec("GET", rw.WriterKey); got != "fair:w1" {
				t.Fatalf("writer key after the readers left = %q; want reserved for w1", got)
			}
		})
	}
}
