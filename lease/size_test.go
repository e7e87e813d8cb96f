package lease

import (
	"testing"
	"time"
	"unsafe"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

// maxLockBytes bounds a Lock (a 208-byte size class): every byte of it is
// paid by each held lock, 100,000 of them included (docs/architecture.md,
// "Measured"). Rarely used state belongs in lazily created side structs.
const maxLockBytes = 208

func TestLockStaysSmall(t *testing.T) {
	if got := unsafe.Sizeof(Lock{}); got > maxLockBytes {
		t.Fatalf("unsafe.Sizeof(Lock{}) = %d; want ≤ %d", got, maxLockBytes)
	}
}

// TestHeldKeepAliveLockKeepsNoCommandSlotsWhileIdle: a keep-alive lock
// between renewals carries no lockCmds (what keeps the Lock at 208 bytes
// costs nothing while held), makes one for each renewal and drops it once
// the renewal is confirmed; a lock without keep-alive has its own from the
// start (one allocation with the Lock) and keeps it.
func TestHeldKeepAliveLockKeepsNoCommandSlotsWhileIdle(t *testing.T) {
	srv, locks := managedSim(t, sim.Redis84)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if lock.core().HasCommandSlots() {
		t.Fatal("a held keep-alive lock keeps its command slots after the SET")
	}
	srv.ResetLog()
	clock.Advance(estimateOf(10*time.Second) - 5*time.Second)
	waitLog(t, srv, isRenewal("k"))
	eventually(t, "renewal confirmed", func() bool { return renewedFresh(lock) })
	eventually(t, "command slots dropped", func() bool { return !lock.core().HasCommandSlots() })

	plain, err := locks.Acquire(ctxT(t), "plain", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if !plain.core().HasCommandSlots() {
		t.Fatal("a lock without keep-alive has no command slots for its release")
	}
}
