package actor

import (
	"sync"
	"time"

	sm "github.com/respire-go/respire/statemachine"
)

// timerHeap runs the renewal and deadline timers of every lock of one Locks
// on one clock timer: the locks with a timer armed sit in a min-heap by
// their earliest due time, and the clock timer is set for the top. When it
// fires, every tick that is due is stepped on the firing goroutine, under
// each lock's mutex (a step never blocks), and the timer is set for the next.
// A held lock therefore costs its place in the heap, not a timer, an alarm
// and a mailbox of its own. Ticks are exact: the clock timer is set for the
// earliest due time, so a deadline is noticed as early as with a timer per
// lock. Lock order: a lock's mutex, then the heap's; a tick is stepped with
// the heap's mutex released. It is safe for concurrent use.
type timerHeap struct {
	mu    sync.Mutex
	locks []*Lock // the heap: locks with a timer armed, by next due time
	clock Clock   // the clock of timer
	timer Timer   // the clock timer, created on first use
	at    time.Duration
	set   bool // timer is set to fire at at
}

// lockTimers is a lock's place on its Locks' timer heap. All of it is
// guarded by the heap's mutex; arm and disarm also hold the lock's mutex,
// so renewAt may be read under either.
type lockTimers struct {
	renewAt, deadlineAt   time.Duration // due times; renewAt stays after its tick (renewal lateness)
	renewSeq, deadlineSeq uint32        // Seq of the armed timer; 0 when disarmed
	pos                   int32         // 1 + index in the heap; 0 when not in it
}

// lockTick is one due timer of one lock.
type lockTick struct {
	lock  *Lock
	seq   uint32
	timer sm.Timer
}

// next is the earliest due time of the armed timers; ok is false when none is.
func (t *lockTimers) next() (at time.Duration, ok bool) {
	switch {
	case t.renewSeq != 0 && t.deadlineSeq != 0:
		return min(t.renewAt, t.deadlineAt), true
	case t.renewSeq != 0:
		return t.renewAt, true
	case t.deadlineSeq != 0:
		return t.deadlineAt, true
	}
	return 0, false
}

// arm sets l's timer tm (Seq seq) to fire at at; l.mu is held.
func (h *timerHeap) arm(clock Clock, l *Lock, tm sm.Timer, seq uint32, at time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if tm == sm.TimerRenewal {
		l.timers.renewAt, l.timers.renewSeq = at, seq
	} else {
		l.timers.deadlineAt, l.timers.deadlineSeq = at, seq
	}
	h.place(l)
	if next, _ := h.locks[0].timers.next(); !h.set || next < h.at {
		h.schedule(clock, next)
	}
}

// disarm stops l's timer tm; l.mu is held. The clock timer is stopped when
// no timer is left; otherwise it is left as it is (when it fires for
// nothing, it is set for the next due time).
func (h *timerHeap) disarm(l *Lock, tm sm.Timer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if tm == sm.TimerRenewal {
		l.timers.renewSeq = 0
	} else {
		l.timers.deadlineSeq = 0
	}
	h.place(l)
	if len(h.locks) == 0 && h.timer != nil {
		h.timer.Stop()
		h.set = false
	}
}

// schedule sets the clock timer for at; h.mu is held.
func (h *timerHeap) schedule(clock Clock, at time.Duration) {
	h.at, h.set = at, true
	d := at - clock.Now()
	if h.timer == nil || h.clock != clock { // first use, or a test changed the clock
		if h.timer != nil {
			h.timer.Stop()
		}
		h.clock, h.timer = clock, clock.AfterFunc(d, func() { h.fire(clock) })
		return
	}
	h.timer.Reset(d)
}

// fire steps every due tick, in batches, then sets the clock timer for the
// next due time (or stops it when no timer is armed).
func (h *timerHeap) fire(clock Clock) {
	var buf [64]lockTick
	for {
		ticks := h.due(clock, buf[:0])
		if len(ticks) == 0 {
			return
		}
		for i := range ticks {
			ticks[i].lock.tick(ticks[i].timer, ticks[i].seq)
			ticks[i] = lockTick{}
		}
	}
}

// due takes up to cap(ticks) due ticks off the heap; when none is left, it
// sets the clock timer for the next one.
func (h *timerHeap) due(clock Clock, ticks []lockTick) []lockTick {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := clock.Now()
	for len(h.locks) > 0 && len(ticks) < cap(ticks) {
		l := h.locks[0]
		t := &l.timers
		if next, _ := t.next(); next > now {
			break
		}
		if t.renewSeq != 0 && t.renewAt <= now {
			ticks = append(ticks, lockTick{lock: l, seq: t.renewSeq, timer: sm.TimerRenewal})
			t.renewSeq = 0
		}
		if t.deadlineSeq != 0 && t.deadlineAt <= now {
			ticks = append(ticks, lockTick{lock: l, seq: t.deadlineSeq, timer: sm.TimerDeadline})
			t.deadlineSeq = 0
		}
		h.place(l)
	}
	if len(ticks) > 0 {
		return ticks
	}
	h.set = false
	if len(h.locks) == 0 {
		if h.timer != nil {
			h.timer.Stop()
		}
		return ticks
	}
	next, _ := h.locks[0].timers.next()
	h.schedule(clock, next)
	return ticks
}

// armed counts the lock timers armed (tests).
func (h *timerHeap) armed() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.locks {
		if l.timers.renewSeq != 0 {
			n++
		}
		if l.timers.deadlineSeq != 0 {
			n++
		}
	}
	return n
}

// place puts l where its next due time belongs: in the heap, moved up or
// down, or out of it when no timer of it is armed; h.mu is held.
func (h *timerHeap) place(l *Lock) {
	_, armed := l.timers.next()
	i := int(l.timers.pos) - 1
	switch {
	case i < 0 && !armed:
		return
	case i < 0:
		h.locks = append(h.locks, l)
		i = len(h.locks) - 1
		l.timers.pos = int32(i + 1)
	case !armed:
		last := len(h.locks) - 1
		h.swap(i, last)
		h.locks[last] = nil
		h.locks = h.locks[:last]
		l.timers.pos = 0
		if i == last {
			h.shrink()
			return
		}
		l = h.locks[i]
		h.shrink()
	}
	h.up(i)
	h.down(int(l.timers.pos) - 1)
}

// shrink gives memory back after many locks left the heap; h.mu is held.
func (h *timerHeap) shrink() {
	if c := cap(h.locks); c > 64 && len(h.locks) < c/4 {
		h.locks = append([]*Lock(nil), h.locks...)
	}
}

func (h *timerHeap) less(i, j int) bool {
	a, _ := h.locks[i].timers.next()
	b, _ := h.locks[j].timers.next()
	return a < b
}

func (h *timerHeap) swap(i, j int) {
	h.locks[i], h.locks[j] = h.locks[j], h.locks[i]
	h.locks[i].timers.pos = int32(i + 1)
	h.locks[j].timers.pos = int32(j + 1)
}

func (h *timerHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

func (h *timerHeap) down(i int) {
	n := len(h.locks)
	for {
		least, left := i, 2*i+1
		if left < n && h.less(left, least) {
			least = left
		}
		if right := left + 1; right < n && h.less(right, least) {
			least = right
		}
		if least == i {
			return
		}
		h.swap(i, least)
		i = least
	}
}

// tick steps l with a due timer; the handle ignores a tick whose Seq was
// disarmed or re-armed since.
func (l *Lock) tick(tm sm.Timer, seq uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.step(sm.Input{Kind: sm.InputTimer, Timer: tm, Seq: seq, Now: l.d.clock.Now()}, 0)
}
