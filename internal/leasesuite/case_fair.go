package leasesuite

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// fairQueue starts n fair waiters on key of locks, one after the other,
// each started once the one before it reported its position (so the
// tickets are drawn in start order; ahead were queued before them), and returns the channel each sends
// its index on once it holds the lock; it holds it for hold (hold < 0:
// until the test ends), then releases. The waiters end with ctx; the test's cleanup waits for them.
func fairQueue(t *testing.T, ctx context.Context, locks *lease.Locks, key string, ahead, n int, hold time.Duration,
	opts ...lease.AcquireOption) <-chan int {
	t.Helper()
	order := make(chan int, n)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for i := range n {
		placed := make(chan int, 16)
		o := append([]lease.AcquireOption{lease.WithFairWait(), lease.WithWaitUntilDone(),
			lease.WithQueuePosition(func(p int) {
				select {
				case placed <- p:
				default:
				}
			})}, opts...)
		wg.Go(func() {
			lock, err := locks.Acquire(ctx, key, time.Minute, o...)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("waiter %d: %v", i, err)
				}
				return
			}
			order <- i
			if hold < 0 {
				<-ctx.Done() // held until the test ends: no timing decides what a later step sees
			} else {
				time.Sleep(hold)
			}
			if _, err := lock.Release(context.Background()); err != nil {
				t.Errorf("waiter %d's release: %v", i, err)
			}
		})
		select {
		case p := <-placed:
			if p != ahead+i+1 {
				t.Fatalf("waiter %d queued at %d; want %d", i, p, ahead+i+1)
			}
		case <-ctx.Done():
			t.Fatalf("waiter %d was never placed", i)
		}
	}
	return order
}

// fairTries counts the fair tries (EVALSHA or EVAL of the mutex's fair try
// script) in log.
func fairTries(log []sim.Entry) int {
	n := 0
	sha := conn.ScriptSHA(conn.FairMutexTryScript)
	for _, e := range log {
		if len(e.Args) > 1 && (e.Args[1] == sha || e.Args[1] == conn.FairMutexTryScript) {
			n++
		}
	}
	return n
}

// TestFairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued: 16 fair
// waiters of one Locks queued behind a holder, one after the other (each
// told its position: 1 to 16), take the lock in exactly that order after
// the holder's release, one at a time; on the sim every waiter tried at
// most three times in all (its first try, the claim, and at most one
// spare), not once per hand-off — push woke the head, never the herd
// (rule FairPushWakesOnlyTheHead). The safety-net retry is set past the
// test's end, so that every try counted is one push caused.
func caseFairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		const n = 16
		locks := tg.locks(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		holder, err := locks.Acquire(ctx, "fifo", time.Minute, lease.WithFairWait())
		if err != nil {
			t.Fatal(err)
		}
		before := fairTries(tg.srv.Log())
		// The safety-net retry (about a second) is pushed past the test:
		// on a loaded machine the 16 hand-offs can take longer than a
		// second, and the tries counted must be push's alone.
		order := fairQueue(t, ctx, locks, "fifo", 0, n, time.Millisecond, lease.WithRetryEvery(time.Minute))
		if _, err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		for want := range n {
			select {
			case got := <-order:
				if got != want {
					t.Fatalf("hand-off %d went to waiter %d; want %d (ticket order)", want+1, got, want)
				}
			case <-ctx.Done():
				t.Fatalf("hand-off %d never came", want+1)
			}
		}
		tries := fairTries(tg.srv.Log()) - before
		t.Logf("%d fair tries for %d waiters", tries, n)
		if !tg.real && tries > 3*n {
			t.Fatalf("%d fair tries for %d waiters; want at most %d (push wakes the head, not the herd)", tries, n, 3*n)
		}
		eventually(t, "the queue emptied", func() bool {
			w, err := locks.Waiters(ctx, "fifo")
			return err == nil && w == 0
		})
	})
}

func init() {
	register(Case{"FairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued", caseFairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued})
}

// pass lets d pass on the server: the sim's clock is advanced, a real
// server's is waited for.
func (tg *target) pass(d time.Duration) {
	if tg.clock != nil {
		tg.clock.Advance(d)
		return
	}
	time.Sleep(d)
}

// rawFairWaiter queues token for key's mutex with a waiter lease of
// waiterMs by the fair try script, sent by an outsider that never renews
// it: a waiter that died once queued.
func rawFairWaiter(t *testing.T, tg *target, key, token string, waiterMs int) {
	t.Helper()
	r, err := conn.FairMutex(key)
	if err != nil {
		t.Fatal(err)
	}
	q := r.Queue()
	reply := tg.srv.Exec("EVAL", conn.FairMutexTryScript, "3", key, q.QueueKey, q.LeasesKey, token, "60000",
		strconv.Itoa(waiterMs), "0")
	if !strings.HasPrefix(reply, ":-") {
		t.Fatalf("queueing %s: %q; want a position", token, reply)
	}
}

// TestFairDeadWaiterCostsItsWaiterLease_AGrantToADeadWaiterLapsesAtItsWaiterLease:
// a waiter that died once queued (its waiter lease never renewed) is at
// the head when the holder releases: the lock is reserved for it, and the
// live waiter behind it gets the lock once that reservation lapsed with
// the dead waiter's waiter lease — not earlier, and far sooner than the
// lock's lease (a minute). A dead waiter in the middle of the queue costs
// nothing: its place is gone when the queue reaches it.
func caseFairDeadWaiterCostsItsWaiterLease_AGrantToADeadWaiterLapsesAtItsWaiterLease(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		const deadLease = 400 * time.Millisecond
		locks := tg.locks(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		holder, err := locks.Acquire(ctx, "q", time.Minute, lease.WithFairWait())
		if err != nil {
			t.Fatal(err)
		}
		rawFairWaiter(t, tg, "q", "dead", int(deadLease/time.Millisecond))
		order := fairQueue(t, ctx, locks, "q", 1, 1, 0, lease.WithWaiterLease(300*time.Millisecond))
		if _, err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got := tg.srv.Exec("GET", "q"); !strings.Contains(got, "fair:dead") {
			t.Fatalf("key after the release = %q; want reserved for the dead waiter", got)
		}
		released := time.Now()
		select {
		case <-order:
			t.Fatal("the live waiter took the lock while it was reserved for the waiter ahead of it")
		case <-time.After(deadLease / 4):
		}
		tg.pass(deadLease + time.Millisecond)
		select {
		case <-order:
			if waited := time.Since(released); waited > 10*time.Second {
				t.Fatalf("the live waiter got the lock %v after the release; want about the dead waiter's waiter lease", waited)
			}
		case <-ctx.Done():
			t.Fatal("the live waiter never got the lock after the dead waiter's grant lapsed")
		}
	})
}

// TestFairNonFairNeverTakesAReservation_AndOvertakingIsCounted: a fair
// holder's release reserves the lock for the fair head, and a non-fair
// TryAcquire made right after it is refused; with a non-fair holder, a
// non-fair acquisition that gets in between its release and the head's
// reservation (here: an outsider's script that deletes the key and sets
// another owner in one step) takes the lock — the fair waiter keeps its
// place, gets the lock after that owner, and the overtaking is counted
// in the queue.
func caseFairNonFairNeverTakesAReservation_AndOvertakingIsCounted(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		holder, err := locks.Acquire(ctx, "mix", time.Minute, lease.WithFairWait())
		if err != nil {
			t.Fatal(err)
		}
		order := fairQueue(t, ctx, locks, "mix", 0, 1, -1)
		if _, err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if a, err := locks.TryAcquire(ctx, "mix", time.Minute); err != nil || a.Acquired() {
			t.Fatalf("non-fair TryAcquire during a fair hand-off = %v, %v; want refused", a.Acquired(), err)
		}
		<-order

		unfair, err := locks.Acquire(ctx, "mix2", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		polling := tg.locks(t, lease.WithoutPush())
		order2 := fairQueue(t, ctx, polling, "mix2", 0, 1, 0, lease.WithRetryEvery(time.Minute),
			lease.WithWaiterLease(3*time.Second))
		defer unfair.Close()
		q, _ := conn.FairMutex("mix2")
		tg.srv.Exec("EVAL", "redis.call('del', KEYS[1]) return redis.call('set', KEYS[1], 'barger', 'PX', 60000)", "1", "mix2")
		tg.srv.Exec("EVAL", conn.FairMutexRenewScript, "3", "mix2", q.Queue().QueueKey, q.Queue().LeasesKey, "probe", "1000")
		if got := tg.srv.Exec("EVAL", conn.FairOvertakenScript, "1", q.Queue().QueueKey); got != ":1\r\n" {
			t.Fatalf("overtakings counted = %q; want 1", got)
		}
		tg.srv.Exec("DEL", "mix2")
		select {
		case <-order2:
		case <-ctx.Done():
			t.Fatal("the fair waiter never got the lock after the overtaking owner left")
		}
	})
}

func init() {
	register(Case{"FairDeadWaiterCostsItsWaiterLease_AGrantToADeadWaiterLapsesAtItsWaiterLease",
		caseFairDeadWaiterCostsItsWaiterLease_AGrantToADeadWaiterLapsesAtItsWaiterLease},
		Case{"FairNonFairNeverTakesAReservation_AndOvertakingIsCounted", caseFairNonFairNeverTakesAReservation_AndOvertakingIsCounted})
}

// TestFairGrantsInTicketOrder_SemaphorePermitsAndRWLockHolds: behind a
// full semaphore of limit 2, six fair waiters get permits in ticket order
// (two at a time: waiter i among the first i+2 to get one); behind a writer, a fair queue of two readers, a
// writer and a reader is served as readers together, then the writer
// alone, then the last reader — the reader behind the writer never
// overtakes it.
func caseFairGrantsInTicketOrder_SemaphorePermitsAndRWLockHolds(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sem := locks.Semaphore("pool", 2)
		var held []*lease.Lock
		for range 2 {
			p, err := sem.Acquire(ctx, time.Minute, lease.WithFairWait())
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, p)
		}
		order := make(chan int, 6)
		queueFair(t, ctx, 0, 6, func(i int, o []lease.AcquireOption) (*lease.Lock, error) {
			return sem.Acquire(ctx, time.Minute, o...)
		}, order)
		for _, p := range held {
			if _, err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for k := range 6 { // two permits go out at a time: waiter i is granted among the first i+2
			if got := <-order; got >= k+2 {
				t.Fatalf("permit %d went to waiter %d; want one of the first %d in ticket order", k+1, got, k+2)
			}
		}

		rw := locks.RWLock("doc")
		writer, err := rw.Lock(ctx, time.Minute, lease.WithFairWait())
		if err != nil {
			t.Fatal(err)
		}
		kinds := []bool{false, false, true, false} // write?
		got := make(chan int, len(kinds))
		queueFair(t, ctx, 0, len(kinds), func(i int, o []lease.AcquireOption) (*lease.Lock, error) {
			if kinds[i] {
				return rw.Lock(ctx, time.Minute, o...)
			}
			return rw.RLock(ctx, time.Minute, o...)
		}, got)
		if _, err := writer.Release(ctx); err != nil {
			t.Fatal(err)
		}
		first := map[int]bool{<-got: true, <-got: true}
		if !first[0] || !first[1] {
			t.Fatalf("after the writer: %v; want readers 0 and 1 together", first)
		}
		if g := <-got; g != 2 {
			t.Fatalf("then waiter %d; want the writer (2)", g)
		}
		if g := <-got; g != 3 {
			t.Fatalf("then waiter %d; want the last reader (3)", g)
		}
	})
}

// queueFair starts n fair waiters, one after the other (each once the one
// before reported position ahead+i+1), each taking with acquire, sending
// its index on order, holding 5 ms and releasing; the test's cleanup waits
// for them.
func queueFair(t *testing.T, ctx context.Context, ahead, n int, acquire func(i int, o []lease.AcquireOption) (*lease.Lock, error),
	order chan<- int) {
	t.Helper()
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for i := range n {
		placed := make(chan int, 16)
		o := []lease.AcquireOption{lease.WithFairWait(), lease.WithWaitUntilDone(), lease.WithQueuePosition(func(p int) {
			select {
			case placed <- p:
			default:
			}
		})}
		wg.Go(func() {
			lock, err := acquire(i, o)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("waiter %d: %v", i, err)
				}
				return
			}
			order <- i
			time.Sleep(5 * time.Millisecond)
			if _, err := lock.Release(context.Background()); err != nil {
				t.Errorf("waiter %d's release: %v", i, err)
			}
		})
		select {
		case p := <-placed:
			if p != ahead+i+1 {
				t.Fatalf("waiter %d queued at %d; want %d", i, p, ahead+i+1)
			}
		case <-ctx.Done():
			t.Fatalf("waiter %d was never placed", i)
		}
	}
}

// TestFairWaiterLeavesWhenItsWaitEnds: a fair waiter whose ctx ends leaves
// the queue at once (the queue counts one waiter less), and the waiter
// behind it is the head: it gets the lock as soon as the holder releases,
// without waiting out the leaver's waiter lease.
func caseFairWaiterLeavesWhenItsWaitEnds(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		holder, err := locks.Acquire(ctx, "leave", time.Minute, lease.WithFairWait())
		if err != nil {
			t.Fatal(err)
		}
		short, stop := context.WithCancel(ctx)
		leaver := make(chan error, 1)
		go func() {
			_, err := locks.Acquire(short, "leave", time.Minute, lease.WithFairWait(), lease.WithWaitUntilDone(),
				lease.WithWaiterLease(time.Minute))
			leaver <- err
		}()
		eventually(t, "the first waiter queued", func() bool {
			n, err := locks.Waiters(ctx, "leave")
			return err == nil && n == 1
		})
		order := fairQueue(t, ctx, locks, "leave", 1, 1, 0)
		stop()
		if err := <-leaver; err == nil {
			t.Fatal("the leaver acquired")
		}
		eventually(t, "the leaver left the queue", func() bool {
			n, err := locks.Waiters(ctx, "leave")
			return err == nil && n == 1
		})
		if _, err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-order:
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter behind the leaver did not get the lock")
		}
	})
}

func init() {
	register(Case{"FairGrantsInTicketOrder_SemaphorePermitsAndRWLockHolds", caseFairGrantsInTicketOrder_SemaphorePermitsAndRWLockHolds},
		Case{"FairWaiterLeavesWhenItsWaitEnds", caseFairWaiterLeavesWhenItsWaitEnds})
}
