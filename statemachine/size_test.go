package statemachine

import (
	"testing"
	"time"
	"unsafe"
)

// maxHandleBytes bounds the per-handle core: every lock, held or not, pays
// it (100,000 held locks included). What only a step, a waiting caller or a
// fence needs lives in the stepper or the handle's side.
const maxHandleBytes = 80

func TestHandleStaysSmall(t *testing.T) {
	if got := unsafe.Sizeof(Handle{}); got > maxHandleBytes {
		t.Fatalf("unsafe.Sizeof(Handle{}) = %d; want ≤ %d", got, maxHandleBytes)
	}
	t.Logf("unsafe.Sizeof(Handle{}) = %d, Effect = %d, Input = %d",
		unsafe.Sizeof(Handle{}), unsafe.Sizeof(Effect{}), unsafe.Sizeof(Input{}))
}

func TestStepDoesNotAllocateOnTheRenewalPath(t *testing.T) {
	d := acquired(t, time.Minute, true)
	buf := make([]Effect, 0, 16)
	h := d.h
	now := d.now
	allocs := testing.AllocsPerRun(100, func() {
		now += time.Millisecond
		buf = h.Step(Input{Kind: InputResetExpiry, Caller: 7, TTL: time.Minute, Now: now}, buf[:0])
		op := buf[1].Op
		buf = h.Step(Input{Kind: InputCommandDone, Op: op, Outcome: OutcomeOK, Now: now}, buf[:0])
	})
	if allocs != 0 {
		t.Fatalf("allocs per reset round trip = %v; want 0", allocs)
	}
}
