package lease

import (
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
