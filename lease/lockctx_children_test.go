package lease

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// TestLockContext_ChildrenEndWithTheLeaseAndItsCauseWithoutAGoroutineEach:
// contexts made from Lock.Context with the context package (WithCancel,
// WithTimeout, AfterFunc) end with the lease and carry its cause; they
// register with the lock's context (its AfterFunc), not with a goroutine
// each waiting on Done; a child cancelled or an AfterFunc stopped before
// the end is forgotten and never runs.
func TestLockContext_ChildrenEndWithTheLeaseAndItsCauseWithoutAGoroutineEach(t *testing.T) {
	_, locks := managedSim(t, sim.Redis84)
	lock, err := locks.Acquire(ctxT(t), "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lease := lock.Context()
	goroutines := runtime.NumGoroutine()
	const n = 200
	children := make([]context.Context, n)
	for i := range children {
		child, cancel := context.WithCancel(lease)
		defer cancel()
		children[i] = child
	}
	timed, cancelTimed := context.WithTimeout(lease, time.Hour)
	defer cancelTimed()
	early, cancelEarly := context.WithCancel(lease)
	cancelEarly()
	var ran, stoppedRan atomic.Int32
	context.AfterFunc(lease, func() { ran.Add(1) })
	stop := context.AfterFunc(lease, func() { stoppedRan.Add(1) })
	if !stop() {
		t.Fatal("stopping an AfterFunc before the lease ended reported it had started")
	}
	if extra := runtime.NumGoroutine() - goroutines; extra >= n/2 {
		t.Fatalf("%d children of the lock's context started %d goroutines; want none per child", n, extra)
	}
	if err := lease.Err(); err != nil || timed.Err() != nil || children[0].Err() != nil {
		t.Fatalf("contexts ended before the lease: %v, %v, %v", err, timed.Err(), children[0].Err())
	}
	if _, err := lock.Release(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, c := range append(children, timed, lease) {
		waitDone(t, c)
		if cause := context.Cause(c); !errors.Is(cause, ErrReleased) {
			t.Fatalf("cause %v; want ErrReleased", cause)
		}
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("Err %v; want context.Canceled", c.Err())
		}
	}
	if cause := context.Cause(early); !errors.Is(cause, context.Canceled) || errors.Is(cause, ErrReleased) {
		t.Fatalf("a child cancelled before the end has cause %v; want its own (context.Canceled)", cause)
	}
	eventually(t, "the AfterFunc ran", func() bool { return ran.Load() == 1 })
	if stoppedRan.Load() != 0 {
		t.Fatal("an AfterFunc stopped before the end ran")
	}
	late := context.AfterFunc(lease, func() { ran.Add(1) })
	eventually(t, "an AfterFunc registered after the end ran", func() bool { return ran.Load() == 2 })
	if late() {
		t.Fatal("stopping an AfterFunc registered after the end reported it had not started")
	}
}
