package leakcheck

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestVerifyTestMainWaitsForGoroutinesThatEndLate: a goroutine that ends
// a second after the tests (later than goleak's own retries) is not a
// leak once it ended; one still running at the check is found.
func TestVerifyTestMainWaitsForGoroutinesThatEndLate(t *testing.T) {
	before := goleak.IgnoreCurrent()
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-release
	}()
	if err := goleak.Find(before); err == nil {
		t.Fatal("goleak.Find found no goroutine while one still ran")
	}
	timer := time.AfterFunc(time.Second, func() { close(release) })
	defer timer.Stop()
	if err := settled([]goleak.Option{before}); err != nil {
		t.Fatalf("settled = %v; want nil once the goroutine ended", err)
	}
	<-done
}
