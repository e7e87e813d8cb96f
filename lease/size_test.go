package lease

import (
	"context"
	"math"
	"testing"
	"unsafe"
)

// maxLockBytes bounds a Lock (a 288-byte size class): every byte of it is
// paid by each held lock, 100,000 of them included (docs/architecture.md,
// "Measured"). Rarely used state belongs in lazily created side structs.
const maxLockBytes = 288

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
