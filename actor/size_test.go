package actor

import (
	"context"
	"math"
	"testing"
)

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
