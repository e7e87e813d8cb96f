package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/coordination"
	"github.com/respire-go/respire/lease"
)

// pausedLease is the lease of the paused scene: short, so that a pause
// outlasts it in real time, and long enough for a loaded machine's replies.
const pausedLease = time.Second

// naiveKey is the naive lock's key in the paused scene; respire-go's lock
// uses invoiceLease and invoiceCounter, as the -wire paused scene does.
const naiveKey = "locks:invoice:42"

// naiveRun is what the naive lock's paused scene found: A took the lock
// with SET NX PX and was paused until B, which took it once A's key
// expired, had written; then A wrote and deleted the key with DEL.
type naiveRun struct {
	paused       time.Duration // how long A was paused, from its SET
	takenAfter   time.Duration // when B's SET NX succeeded, from A's
	writers      int           // how many workers' writes the store accepted
	kept         string        // what the store kept
	deletedOther bool          // A's DEL deleted B's lock
}

// pausedNaive plays the paused holder with a naive lock: SET key val NX PX
// to acquire, DEL key to release, no token check anywhere. A's pause is
// real time: A waits until B has written, which B can only do once A's
// key expired on the server.
func (s *storyStage) pausedNaive(ctx context.Context) (naiveRun, error) {
	clientA, err := s.client()
	if err != nil {
		return naiveRun{}, err
	}
	clientB, err := s.client()
	if err != nil {
		return naiveRun{}, err
	}
	setNX := func(client *naiveClient, who string) (bool, error) {
		reply, err := client.do(ctx, "SET", naiveKey, who, "NX", "PX", strconv.FormatInt(pausedLease.Milliseconds(), 10))
		return err == nil && reply.Kind != conn.ReplyNil, err
	}
	var run naiveRun
	store := &naiveStore{}
	start := time.Now() // before A's SET: its key cannot expire before start + pausedLease
	if ok, err := setNX(clientA, "A"); err != nil || !ok {
		return run, fmt.Errorf("the SET NX of A = %v, %w", ok, errors.Join(err, errNotOK))
	}
	for { // B polls every 10 ms, as a naive waiter does
		ok, err := setNX(clientB, "B")
		if err != nil {
			return run, err
		}
		if ok {
			break
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return run, err
		}
	}
	run.takenAfter = time.Since(start)
	store.write("B", "total=120")
	run.paused = time.Since(start) // A resumes: its pause outlasted its lease
	store.write("A", "total=100")  // nothing tells A that its lock is gone
	got, _ := clientA.do(ctx, "GET", naiveKey)
	holder := got.Text
	del, err := clientA.do(ctx, "DEL", naiveKey)
	deleted := del.Int
	if err != nil {
		return run, err
	}
	run.writers, run.kept, run.deletedOther = len(store.writers), store.total, deleted == 1 && holder == "B"
	return run, nil
}

// naiveStore is the resource a naive lock protects: it takes every write.
type naiveStore struct {
	total   string
	writers []string
}

func (st *naiveStore) write(who, total string) { st.total, st.writers = total, append(st.writers, who) }

// safeRun is what respire-go's paused scene found: A took a fencing-token
// lock and was paused until B had taken the lock with the next token and
// written; then A checked its lock's Context and tried its write.
type safeRun struct {
	paused     time.Duration        // how long A was paused, from its acquisition
	takenAfter time.Duration        // when B's Acquire returned, from A's
	tokenA     int64                // A's fencing token
	tokenB     int64                // B's
	cause      error                // A's lock.Context() cause when it resumed
	lateWrite  error                // the store's answer to A's write with its token
	guarded    error                // A's guarded write to the invoice's Redis hash (lock.Guard)
	hashKept   string               // the hash's total after it: B's guarded write's
	kept       string               // what the store kept
	release    lease.ReleaseOutcome // A's Release after the pause
}

// pausedSafe plays the paused holder with respire-go: a fencing-token lock
// (coordination) without keep-alive (a paused process renews nothing), A
// paused as in pausedNaive until B, waiting in Acquire, took the lock and
// wrote. B can only take it after A's key expired on the server, so A's
// lease has ended by A's own clock when it resumes, and its Context says
// so at the first check (Err is exact).
func (s *storyStage) pausedSafe(ctx context.Context) (safeRun, error) {
	var run safeRun
	locksA, errA := s.newLocks()
	locksB, errB := s.newLocks()
	if err := errors.Join(errA, errB); err != nil {
		return run, err
	}
	coordA, errA := coordination.New(locksA)
	coordB, errB := coordination.New(locksB)
	if err := errors.Join(errA, errB); err != nil {
		return run, err
	}
	start := time.Now() // before A's acquisition: its key cannot expire before start + pausedLease
	lockA, err := acquireFenced(ctx, coordA)
	if err != nil {
		return run, err
	}
	defer lockA.Close()
	lockB, err := acquireFenced(ctx, coordB, lease.WithWait(10*time.Second))
	if err != nil {
		return run, err
	}
	defer lockB.Close()
	run.takenAfter = time.Since(start)
	store := &invoiceStore{}
	if err := store.WriteIfNewer(lockB.FencingToken(), "total=120"); err != nil {
		return run, err
	}
	if err := lockB.Guard(ctx, lease.Command("HSET", invoiceState, "total", "120")); err != nil {
		return run, err
	}
	run.paused = time.Since(start) // A resumes
	run.tokenA, run.tokenB = lockA.FencingToken(), lockB.FencingToken()
	run.cause = context.Cause(lockA.Context()) // A checks before it writes
	run.lateWrite = store.WriteIfNewer(lockA.FencingToken(), "total=100")
	run.guarded = lockA.Guard(ctx, lease.Command("HSET", invoiceState, "total", "100"))
	run.hashKept = s.srv.Exec("HGET", invoiceState, "total")
	run.kept = store.total
	if run.release, err = lockA.Release(ctx); err != nil {
		return run, err
	}
	return run, nil
}

// acquireFenced acquires the paused scene's fencing-token lock, again
// while the reply came after the lease could have expired (a machine so
// loaded that a reply took a lease: nothing is held then).
func acquireFenced(ctx context.Context, coord *coordination.Coordinator, opts ...lease.AcquireOption) (*coordination.Lock, error) {
	for tries := 1; ; tries++ {
		lock, err := coord.Acquire(ctx, invoiceLease, invoiceCounter, pausedLease, opts...)
		if !errors.Is(err, lease.ErrAcquiredTooLate) || tries == 5 {
			return lock, err
		}
	}
}

// printPaused prints the paused scene, the naive lock and respire-go side
// by side, one row per step (a row fits each further step of either).
func printPaused(p *printer, naive naiveRun, safe safeRun) {
	p.line("")
	p.line("1. A holder pauses past its lease (GC pause, swap, SIGSTOP); lease %s, B waits for the lock", dur(pausedLease))
	verdict := func(ok bool) string {
		if ok {
			return "✓"
		}
		return "✗"
	}
	late := "accepted (wrong)"
	if errors.Is(safe.lateWrite, errStaleToken) {
		late = fmt.Sprintf("refused: token %d < %d", safe.tokenA, safe.tokenB)
	}
	deleted := "DEL → B's lock untouched"
	if naive.deletedOther {
		deleted = "DEL → deletes B's lock"
	}
	// One row per step; a further step of either side (a guarded write)
	// is one more row.
	sideBySide(p, 40, [][2]string{
		{"naive SET NX PX + DEL", "respire-go (coordination.Acquire)"},
		{"A  SET NX → OK", fmt.Sprintf("A  acquired, fencing token %d", safe.tokenA)},
		{fmt.Sprintf("B  SET NX → OK after %s, writes 120", ms(naive.takenAfter)),
			fmt.Sprintf("B  acquired after %s, token %d, writes 120", ms(safe.takenAfter), safe.tokenB)},
		{fmt.Sprintf("A  resumes after %s, writes 100", ms(naive.paused)),
			fmt.Sprintf("A  resumes after %s: lock.Context() ended", ms(safe.paused))},
		{"", fmt.Sprintf("   (%s): A skips its write", trimLease(safe.cause))},
		{"", "A  writes anyway with token " + fmt.Sprint(safe.tokenA) + " → " + late},
		{"", "A  lock.Guard(HSET total 100) → " + guardedText(safe.guarded)},
		{"A  " + deleted, fmt.Sprintf("A  Release → %v: B's lock untouched", safe.release)},
		{fmt.Sprintf("%s %d writers; A's stale %s kept", verdict(naive.writers <= 1), naive.writers, naive.kept),
			fmt.Sprintf("%s 1 writer; B's %s kept", verdict(safe.kept == "total=120"), safe.kept)},
	})
}

// guardedText tells what a guarded write answered, in a few words.
func guardedText(err error) string {
	switch {
	case err == nil:
		return "written (wrong)"
	case errors.Is(err, lease.ErrOwnershipLost), errors.Is(err, lease.ErrNotHeld):
		return "refused, none written"
	}
	return err.Error()
}

// trimLease is err's text without the "lease: " prefix.
func trimLease(err error) string {
	if err == nil {
		return "still held"
	}
	text := err.Error()
	if len(text) > 7 && text[:7] == "lease: " {
		return text[7:]
	}
	return text
}

// sleepCtx sleeps d, or returns ctx's cause when it ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
