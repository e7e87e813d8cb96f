package actor

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// TestPushChangeDuringReadIsSeen_AFreeKeyFoundWhileTheBatonIsOutIsTriedAgain:
// a holders' read that finds the key free while the baton is out (its
// waiter's SET NX may have been sent before the key was free) makes that
// waiter try once more at once when it comes back, though the read left
// the key tracked: it does not park on a free key. The hub's pieces are
// driven directly, in the order the race takes.
func TestPushChangeDuringReadIsSeen_AFreeKeyFoundWhileTheBatonIsOutIsTriedAgain(t *testing.T) {
	_, d := testDriver(t, sim.Valkey90)
	h := d.push
	const key = "push:missed"
	w := &pushWaiter{wake: make(chan struct{}, 1)}
	h.mu.Lock()
	e := h.entry(key)
	e.waiters = append(e.waiters, w)
	// A change hands w the baton: it goes to try SET NX. A holders' read
	// is in flight, and its holder leaves meanwhile; the read finds the
	// key free (and tracks it).
	h.passBatonLocked(e)
	e.check = true
	h.settleReadLocked(holderRead{key: key, e: e, gen: e.gen}, false, nil)
	armed, missed := e.armed, e.missed
	h.mu.Unlock()
	defer h.leave(key, w, false)
	<-w.wake
	if !armed || !missed {
		t.Fatalf("after the read: armed %v, missed %v; want the key tracked and the baton's waiter told to try again", armed, missed)
	}
	// w's SET NX failed (it ran before the key was free): its next wait
	// must return at once, not park a minute on the tracked key.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pw := w
	if err := h.wait(ctx, nil, waitOn{key: key}, time.Minute, time.Minute, &pw); err != nil {
		t.Fatalf("the baton's waiter's next wait: %v; want an immediate try", err)
	}
}

// TestPushDetectsLoss_HolderChainUnlinksAnyHolder: holders of one key are
// chained, latest first; unlinking one in the middle, the first, then the
// last keeps the others chained in order, and the key leaves held with its
// last holder, leaving other keys' chains alone.
func TestPushDetectsLoss_HolderChainUnlinksAnyHolder(t *testing.T) {
	_, d := testDriver(t, sim.Valkey90)
	h := d.push
	a, b, c, other := &Lock{wireKey: "k"}, &Lock{wireKey: "k"}, &Lock{wireKey: "k"}, &Lock{wireKey: "j"}
	locked := func(f func()) { h.mu.Lock(); defer h.mu.Unlock(); f() }
	locked(func() {
		for _, l := range []*Lock{a, b, other, c} {
			h.linkHolderLocked(l)
		}
	})
	for _, step := range []struct {
		unlink *Lock
		want   []*Lock
	}{{nil, []*Lock{c, b, a}}, {b, []*Lock{c, a}}, {c, []*Lock{a}}, {a, nil}} {
		if step.unlink != nil {
			locked(func() { h.unlinkHolderLocked(step.unlink) })
			locked(func() {
				if h.held.nextOf(step.unlink) != nil {
					t.Fatal("an unlinked holder still points into the chain")
				}
			})
		}
		if got := d.PushHolders("k"); !slices.Equal(got, step.want) {
			t.Fatalf("chain %v; want %v", got, step.want)
		}
	}
	locked(func() {
		if h.held.get("k") != nil || h.held.get("j") != other || h.held.n != 1 {
			t.Errorf("%d keys held; want only j's holder", h.held.n)
		}
		if h.held.next != nil {
			t.Errorf("the chains keep %d entries once every chain is one long; want none", len(h.held.next))
		}
		h.unlinkHolderLocked(other)
		if h.held.n != 0 {
			t.Errorf("%d keys held; want none", h.held.n)
		}
	})
}
