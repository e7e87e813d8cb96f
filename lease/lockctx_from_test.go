package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

func TestLockContextFrom_EndsWithTheLeaseOrTheParentWhicheverFirst(t *testing.T) {
	_, locks := managedSim(t, sim.Redis84)
	lock, err := locks.Acquire(ctxT(t), "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	type key struct{}
	parent, cancelParent := context.WithCancel(context.WithValue(ctxT(t), key{}, "request"))
	work, done := lock.ContextFrom(parent)
	defer done()
	if work.Value(key{}) != "request" || work.Err() != nil {
		t.Fatalf("ContextFrom lost the parent's values or ended early: %v", work.Err())
	}
	if _, err := lock.Release(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	waitDone(t, work)
	if cause := context.Cause(work); !errors.Is(cause, ErrReleased) {
		t.Fatalf("cause %v; want ErrReleased", cause)
	}
	cancelParent()

	other, err := locks.Acquire(ctxT(t), "k2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	parent2, cancel2 := context.WithCancelCause(ctxT(t))
	work2, done2 := other.ContextFrom(parent2)
	defer done2()
	stop := errors.New("request over")
	cancel2(stop)
	waitDone(t, work2)
	if cause := context.Cause(work2); !errors.Is(cause, stop) || other.Context().Err() != nil {
		t.Fatalf("cause %v, lock context %v; want the parent's cause and the lease going on", cause, other.Context().Err())
	}
}
