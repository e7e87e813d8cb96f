package actor

import (
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// TestPushWakesOneWaiterPerRelease_NoWaiterIsStrandedWhenTheWokenOneLeaves:
// the waiter a change woke leaves with the baton, and the other waiter of
// the key is never left parked on an untracked or free key: when the woken
// one gave up (its ctx ended, or its try failed) on a free key, the key is
// read again and the other is woken; when it left with the key after a
// change during its try (its own SET NX), the other is not woken while the
// key is held, but is by the next change, which the read tracked. The
// hub's pieces are driven directly, in the order the races take.
func TestPushWakesOneWaiterPerRelease_NoWaiterIsStrandedWhenTheWokenOneLeaves(t *testing.T) {
	srv, d := testDriver(t, sim.Valkey90)
	h := d.push
	woken := func(w *pushWaiter) bool {
		select {
		case <-w.wake:
			return true
		case <-time.After(5 * time.Second): // bounds a failure only
			return false
		}
	}
	for _, acquired := range []bool{false, true} {
		key := "push:stranded:" + map[bool]string{false: "gaveup", true: "acquired"}[acquired]
		w1, w2 := &pushWaiter{wake: make(chan struct{}, 1)}, &pushWaiter{wake: make(chan struct{}, 1)}
		h.mu.Lock()
		e := h.entry(key)
		e.waiters = append(e.waiters, w1, w2)
		h.passBatonLocked(e) // a change: w1 tries
		if acquired {
			srv.Exec("SET", key, "w1", "PX", "60000")
			e.missed = true // and its SET NX's own change came back while it tried
		}
		h.mu.Unlock()
		<-w1.wake
		h.leave(key, w1, acquired)
		if !acquired {
			if !woken(w2) {
				t.Fatal("w1 gave up on a free key; w2 was not woken")
			}
			h.leave(key, w2, false)
			continue
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) { // the read again for w2 tracks the key
			h.mu.Lock()
			armed, arming := e.armed, e.arming
			h.mu.Unlock()
			if armed || !arming {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the key was not read again for w2")
			}
		}
		select {
		case <-w2.wake:
			t.Fatal("w2 was woken while w1 holds the key")
		default:
		}
		srv.Exec("DEL", key) // w1's lease ends (as seen from the server)
		if !woken(w2) {
			t.Fatal("the key changed after w1 left with it; w2 was not woken")
		}
		h.leave(key, w2, false)
	}
}

// TestFairGrantsInTicketOrder_ALocalReleaseWakesTheLocalHeadAtOnce: the
// release of a fair holder, which grants the lock to the queue's head in
// its script, wakes the head waiting in the same Locks from the release's
// reply (not when the key's invalidation comes); the waiters behind it stay
// parked. The hub is driven directly, as the release's reply drives it.
func TestFairGrantsInTicketOrder_ALocalReleaseWakesTheLocalHeadAtOnce(t *testing.T) {
	_, d := testDriver(t, sim.Valkey90)
	h := d.push
	const key = "fair:local"
	head := &fairWaiter{wake: make(chan struct{}, 1), pos: 1}
	second := &fairWaiter{wake: make(chan struct{}, 1), pos: 2}
	h.mu.Lock()
	e := h.entry(key)
	e.fair = append(e.fair, second, head)
	h.mu.Unlock()
	holder := &Lock{wireKey: key}
	holder.setKind(KindMutex | kindFair)
	h.released(holder)
	select {
	case <-head.wake:
	default:
		t.Fatal("the local head was not woken by the fair holder's release")
	}
	select {
	case <-second.wake:
		t.Fatal("the waiter behind the head was woken")
	default:
	}
}
