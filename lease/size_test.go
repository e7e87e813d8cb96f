package lease

import (
	"context"
	"math"
	"testing"
	"time"
	"unsafe"
)

// maxLockBytes bounds a Lock (a 256-byte size class): every byte of it is
// paid by each held lock, 100,000 of them included (docs/architecture.md,
// "Measured"). Rarely used state belongs in lazily created side structs.
const maxLockBytes = 256

func TestLockStaysSmall(t *testing.T) {
	if got := unsafe.Sizeof(Lock{}); got > maxLockBytes {
		t.Fatalf("unsafe.Sizeof(Lock{}) = %d; want ≤ %d", got, maxLockBytes)
	}
}

// TestNewCallerSkipsZeroWhenTheCounterWraps: caller ids are 32 bits (to keep
// the Handle small) and 0 means "no caller" (a keep-alive or timer input) to
// the core, so the 2³²-th request of one lock must not get it.
func TestNewCallerSkipsZeroWhenTheCounterWraps(t *testing.T) {
	l := &Lock{callers: math.MaxUint32}
	l.mu.Lock()
	defer l.mu.Unlock()
	if id := l.newCaller(context.Background()); id != 1 {
		t.Fatalf("the caller after %d got id %d; want 1", uint32(math.MaxUint32), id)
	}
	if id := l.newCaller(context.Background()); id != 2 {
		t.Fatalf("next id %d; want 2", id)
	}
}

// TestHeldKeepAliveLockKeepsNoCommandSlotsWhileIdle: a keep-alive lock
// between renewals carries no lockCmds (what keeps the Lock at 256 bytes
// costs nothing while held), makes one for each renewal and drops it once
// the renewal is confirmed; a lock without keep-alive has its own from the
// start (one allocation with the Lock) and keeps it.
func TestHeldKeepAliveLockKeepsNoCommandSlotsWhileIdle(t *testing.T) {
	srv, clock, lock := acquireWithClock(t, 10*time.Second, WithKeepAlive())
	if cmds := lockCmdsOf(lock); cmds != nil {
		t.Fatalf("a held keep-alive lock keeps its command slots after the SET: %+v", cmds.ops)
	}
	srv.ResetLog()
	clock.Advance(estimateOf(10*time.Second) - 5*time.Second)
	waitLog(t, srv, isRenewal("k"))
	eventually(t, "renewal confirmed", func() bool { return renewedFresh(lock) })
	eventually(t, "command slots dropped", func() bool { return lockCmdsOf(lock) == nil })

	plain, err := lock.locks.Acquire(ctxT(t), "plain", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if lockCmdsOf(plain) == nil {
		t.Fatal("a lock without keep-alive has no command slots for its release")
	}
}

func lockCmdsOf(l *Lock) *lockCmds {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cmds
}
