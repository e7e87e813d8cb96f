package actor

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

// countingClock is a ManualClock that counts its readings.
type countingClock struct {
	ManualClock
	reads atomic.Int64
}

func (c *countingClock) Now() time.Duration {
	c.reads.Add(1)
	return c.ManualClock.Now()
}

func (c *countingClock) AfterFunc(d time.Duration, f func()) Timer {
	return c.ManualClock.AfterFunc(d, f)
}

// heldSpawn is RealSpawn whose Go, while held, keeps the work for later.
type heldSpawn struct {
	Spawn
	mu   sync.Mutex
	hold bool
	kept []func()
}

func (s *heldSpawn) Go(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold {
		s.kept = append(s.kept, f)
		return
	}
	s.Spawn.Go(f)
}

// release stops holding and starts the work kept.
func (s *heldSpawn) release() {
	s.mu.Lock()
	kept := s.kept
	s.hold, s.kept = false, nil
	s.mu.Unlock()
	for _, f := range kept {
		s.Spawn.Go(f)
	}
}

// tickWatch is an Observer that records the timer ticks stepped, in order,
// and how many of dones were closed when the first renewal tick was stepped.
type tickWatch struct {
	mu          sync.Mutex
	ticks       []sm.Timer
	dones       []<-chan struct{}
	doneAtRenew int // -1 until a renewal tick is stepped
}

func (w *tickWatch) Stepped(_ *Lock, in sm.Input, _ []sm.Effect) {
	if in.Kind != sm.InputTimer {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ticks = append(w.ticks, in.Timer)
	if in.Timer == sm.TimerRenewal && w.doneAtRenew < 0 {
		w.doneAtRenew = 0
		for _, done := range w.dones {
			select {
			case <-done:
				w.doneAtRenew++
			default:
			}
		}
	}
}

func (w *tickWatch) Fence(ctx context.Context, _ *Lock) (context.Context, func(error)) {
	return ctx, func(error) {}
}

func (w *tickWatch) RenewalSent(*Lock, time.Duration, time.Duration) {}

// TestDeadlineBurstFiresInOnePass_DeadlineTicksFirstWithoutAClockReadingEach:
// 100 plain locks whose Contexts are watched and 100 keep-alive locks, their
// deadlines and renewals all due at one instant (virtual time, no drift
// margin: a 1 s lease's deadline and a 2 s lease's renewal fall at 1 s),
// acquired alternately so that they lie mixed in the timer heap. When the
// instant comes, every deadline tick is stepped before any renewal tick —
// each plain lock's Context is already done when the first renewal is
// queued — and the deadlines cost no clock reading of their own: the
// firing reads the clock once to pop the first chunk, once to take the
// rest in one pass, once to find none left, and once per renewal (whose
// lease estimate counts from it). The renewals then go out and every
// keep-alive lock stays held.
func TestDeadlineBurstFiresInOnePass_DeadlineTicksFirstWithoutAClockReadingEach(t *testing.T) {
	const n = 100 // of each kind: 2n ticks, more than a chunk (fireChunk): a burst
	clock, spawn, watch := &countingClock{}, &heldSpawn{Spawn: RealSpawn()}, &tickWatch{doneAtRenew: -1}
	_, d := testDriverOn(t, sim.Config{Profile: sim.Redis84, Clock: sim.NewManualClock(time.Unix(1_700_000_000, 0))},
		func(c *Config) {
			c.Clock, c.Spawn, c.Observer, c.Push, c.Drift = clock, spawn, watch, false, sm.Drift{}
		})
	ctx := context.Background()
	var plain, kept []*Lock
	for i := range n {
		p, err := d.Acquire(ctx, AcquireSpec{WireKey: "plain:" + itoa(i), TTL: time.Second})
		if err != nil || p == nil {
			t.Fatalf("Acquire = %v, %v", p, err)
		}
		watch.mu.Lock()
		watch.dones = append(watch.dones, p.Context().Done()) // watched: its deadline timer is armed
		watch.mu.Unlock()
		k, err := d.Acquire(ctx, AcquireSpec{WireKey: "kept:" + itoa(i), TTL: 2 * time.Second, KeepAlive: true})
		if err != nil || k == nil {
			t.Fatalf("Acquire = %v, %v", k, err)
		}
		plain, kept = append(plain, p), append(kept, k)
	}
	d.WaitIdle()
	spawn.mu.Lock()
	spawn.hold = true // the renewals queued by the burst wait: nothing but the firing reads the clock
	spawn.mu.Unlock()
	reads := clock.reads.Load()
	clock.Advance(time.Second)
	reads = clock.reads.Load() - reads
	spawn.release()
	d.WaitIdle()

	watch.mu.Lock()
	ticks, doneAtRenew := append([]sm.Timer(nil), watch.ticks...), watch.doneAtRenew
	watch.mu.Unlock()
	if len(ticks) != 2*n {
		t.Fatalf("%d ticks stepped at the instant; want %d (a deadline and a renewal per pair)", len(ticks), 2*n)
	}
	for i, tm := range ticks {
		if want := map[bool]sm.Timer{true: sm.TimerDeadline, false: sm.TimerRenewal}[i < n]; tm != want {
			t.Fatalf("tick %d of the burst is timer %d; want every deadline (%d) before every renewal (%d): %v",
				i, tm, sm.TimerDeadline, sm.TimerRenewal, ticks)
		}
	}
	if doneAtRenew != n {
		t.Fatalf("%d of the %d plain locks' Contexts done when the burst's first renewal tick was stepped; want all", doneAtRenew, n)
	}
	// The Advance itself reads the clock a few times; the firing three times,
	// and once per renewal tick.
	if limit := int64(n + 8); reads > limit {
		t.Fatalf("the burst of %d deadlines and %d renewals read the clock %d times; want at most %d (none per deadline)",
			n, n, reads, limit)
	}
	for i := range n {
		if err := plain[i].Context().Err(); err == nil {
			t.Fatalf("plain lock %d: its Context lives past its deadline", i)
		}
		if err := kept[i].Context().Err(); err != nil {
			t.Fatalf("keep-alive lock %d: %v after its renewal; want held", i, context.Cause(kept[i].Context()))
		}
	}
}
