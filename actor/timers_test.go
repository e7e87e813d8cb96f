package actor

import (
	"math/rand/v2"
	"testing"
	"time"

	sm "github.com/respire-go/respire/statemachine"
)

// TestTimerHeapTicksExactlyTheDueTimers: random arms, re-arms and disarms of
// the renewal and deadline timers of many locks, against a model of what is
// armed. Whenever time moves, the heap hands out exactly the timers whose
// due time has come, each once, with the Seq that armed it, whether popped
// a few at a time (due) or, after a full chunk, all the rest in one pass
// (dueAll, a burst); the heap property holds after every operation; the
// clock timer is set for the earliest due time, and stopped once nothing
// is armed.
func TestTimerHeapTicksExactlyTheDueTimers(t *testing.T) {
	type key struct {
		lock  int
		timer sm.Timer
	}
	type armedTimer struct {
		at  time.Duration
		seq uint32
	}
	rng := rand.New(rand.NewPCG(1, 2))
	clock := &stillClock{}
	var h timerHeap
	locks := make([]*Lock, 50)
	for i := range locks {
		locks[i] = &Lock{}
	}
	model := map[key]armedTimer{}
	var seq uint32
	for step := range 20000 {
		l, tm := rng.IntN(len(locks)), sm.Timer(1+rng.IntN(2))
		switch op := rng.IntN(10); {
		case op < 5:
			seq++
			at := clock.Now() + time.Duration(rng.IntN(1000))*time.Millisecond
			h.arm(clock, locks[l], tm, seq, at)
			model[key{l, tm}] = armedTimer{at, seq}
		case op < 7:
			h.disarm(locks[l], tm)
			delete(model, key{l, tm})
		default:
			clock.now += time.Duration(rng.IntN(300)) * time.Millisecond // due is called by hand here
			now := clock.Now()
			var buf [7]lockTick // small: due is called until it gives nothing
			for {
				ticks, at := h.due(clock, buf[:0])
				if len(ticks) == cap(ticks) && rng.IntN(2) == 0 {
					checkHeap(t, &h, len(model)-len(ticks))
					ticks, at = h.dueAll(clock, ticks) // a burst: the rest in one pass
				}
				if at != now {
					t.Fatalf("step %d: due read the clock at %v; it says %v", step, at, now)
				}
				if len(ticks) == 0 {
					break
				}
				for _, tk := range ticks {
					i := indexOf(locks, tk.lock)
					want, ok := model[key{i, tk.timer}]
					if !ok || want.seq != tk.seq || want.at > now {
						t.Fatalf("step %d: tick of lock %d timer %d seq %d at %v; model %+v (armed %v)", step, i, tk.timer, tk.seq, now, want, ok)
					}
					delete(model, key{i, tk.timer})
				}
			}
			for k, a := range model {
				if a.at <= now {
					t.Fatalf("step %d: lock %d timer %d due at %v not handed out at %v", step, k.lock, k.timer, a.at, now)
				}
			}
		}
		checkHeap(t, &h, len(model))
	}
}

// stillClock is a clock whose time moves only by hand and whose timers
// never fire: the test drives timerHeap.due itself.
type stillClock struct{ now time.Duration }

func (c *stillClock) Now() time.Duration                    { return c.now }
func (c *stillClock) AfterFunc(time.Duration, func()) Timer { return stillTimer{} }

type stillTimer struct{}

func (stillTimer) Stop() bool               { return true }
func (stillTimer) Reset(time.Duration) bool { return true }

func indexOf(locks []*Lock, l *Lock) int {
	for i := range locks {
		if locks[i] == l {
			return i
		}
	}
	return -1
}

// checkHeap checks positions, the heap property, the armed count and where
// the clock timer is set.
func checkHeap(t *testing.T, h *timerHeap, armed int) {
	t.Helper()
	if n := h.armed(); n != armed {
		t.Fatalf("%d timers armed on the heap; the model has %d", n, armed)
	}
	for i, l := range h.locks {
		if int(l.timerPos) != i+1 {
			t.Fatalf("lock at %d records position %d", i, l.timerPos)
		}
		if _, ok := l.timers.next(); !ok {
			t.Fatalf("lock at %d has no timer armed", i)
		}
		if i > 0 && h.less(i, (i-1)/2) {
			t.Fatalf("heap property broken at %d", i)
		}
	}
	if len(h.locks) == 0 {
		return
	}
	if next, _ := h.locks[0].timers.next(); !h.set || h.at > next {
		t.Fatalf("clock timer set %v for %v; the earliest due time is %v", h.set, h.at, next)
	}
}
