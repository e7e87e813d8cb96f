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
// lock. A burst — thousands of timers due together — costs each lock its
// share of one pass over the heap and its step, and nothing else: the due
// ticks are taken off together (one hold of the heap's mutex and one clock
// reading), the deadline ticks, which end leases and so cancel Contexts,
// are stepped before the renewal ticks, and a step of a firing allocates
// nothing and takes no pooled buffer. Lock order: a lock's mutex, then the
// heap's; a tick is stepped with the heap's mutex released. It is safe for
// concurrent use.
type timerHeap struct {
	mu    sync.Mutex
	locks []*Lock // the heap: locks with a timer armed, by next due time
	clock Clock   // the clock of timer
	timer Timer   // the clock timer, created on first use
	at    time.Duration
	set   bool       // timer is set to fire at at
	spare []lockTick // the buffer of the last burst (dueAll), kept for the next; nil while one is fired
}

// lockTimers is a lock's place on its Locks' timer heap. All of it is
// guarded by the heap's mutex; arm and disarm also hold the lock's mutex,
// so renewAt may be read under either.
type lockTimers struct {
	renewAt, deadlineAt   time.Duration // due times; renewAt stays after its tick (renewal lateness)
	renewSeq, deadlineSeq uint32        // Seq of the armed timer; 0 when disarmed
	// Its place in the heap (1 + index; 0 when not in it) is the Lock's
	// timerPos, in the Lock's tail of small fields: here it would pad
	// lockTimers to 32 bytes.
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

// due is next's time of a lock in the heap (one timer at least armed).
func (t *lockTimers) due() time.Duration {
	at, _ := t.next()
	return at
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
	if next := h.locks[0].timers.due(); !h.set || next < h.at {
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

// fireChunk is how many due ticks fire takes off the heap one at a time;
// when more are due, the rest come off in one pass (dueAll).
const fireChunk = 64

// fire steps every due tick, then sets the clock timer for the next due
// time (or stops it when no timer is armed). A few due ticks are popped
// off the heap; a burst (a chunk's worth and more) is taken off whole, in
// one pass. The deadline ticks taken go first, stepped at the clock reading
// they were taken at (a deadline tick's step only needs to know that its
// time has come; the reading is never later than the true time): they end
// leases, and ending a lease is what cancels its Context, which is what
// code waiting on Done is waiting for. The renewal ticks follow, each
// stepped at a fresh reading, since a renewal's lease estimate counts from
// it.
func (h *timerHeap) fire(clock Clock) {
	var buf [fireChunk]lockTick
	effects := make([]sm.Effect, 0, 16) // every step of this firing reuses it
	for {
		ticks, now := h.due(clock, buf[:0])
		if len(ticks) == 0 {
			return
		}
		burst := len(ticks) == cap(ticks)
		if burst {
			ticks, now = h.dueAll(clock, ticks)
		}
		for i := range ticks {
			if tk := &ticks[i]; tk.timer == sm.TimerDeadline {
				tk.lock.tick(tk.timer, tk.seq, now, &effects)
			}
		}
		for i := range ticks {
			if tk := &ticks[i]; tk.timer != sm.TimerDeadline {
				tk.lock.tick(tk.timer, tk.seq, clock.Now(), &effects)
			}
		}
		clear(ticks)
		if burst {
			h.keep(ticks)
		}
	}
}

// due takes up to cap(ticks) due ticks off the heap and returns them with
// the clock reading they were due by; when none is left, it sets the clock
// timer for the next one.
func (h *timerHeap) due(clock Clock, ticks []lockTick) ([]lockTick, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := clock.Now()
	for len(h.locks) > 0 && len(ticks) < cap(ticks) {
		l := h.locks[0]
		if l.timers.due() > now {
			break
		}
		ticks = l.timers.take(l, now, ticks)
		h.place(l)
	}
	if len(ticks) > 0 {
		return ticks, now
	}
	h.set = false
	if len(h.locks) == 0 {
		if h.timer != nil {
			h.timer.Stop()
		}
		return ticks, now
	}
	h.schedule(clock, h.locks[0].timers.due())
	return ticks, now
}

// dueAll returns ticks and every other tick due, taken in one pass over
// the heap, under one hold of its mutex, and rebuilds the heap from the
// locks left with a timer armed: O(n), where taking k ticks off one at a
// time costs O(k log n) swaps. The ticks are in the buffer of the last
// burst (give it back with keep), grown as needed. It also returns the
// clock reading they were due by.
func (h *timerHeap) dueAll(clock Clock, ticks []lockTick) ([]lockTick, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ticks, h.spare = append(h.spare[:0], ticks...), nil
	now := clock.Now()
	left := h.locks[:0]
	for _, l := range h.locks {
		if t := &l.timers; t.due() <= now {
			ticks = t.take(l, now, ticks)
			if _, armed := t.next(); !armed {
				l.timerPos = 0
				continue
			}
		}
		left = append(left, l)
	}
	clear(h.locks[len(left):])
	h.locks = left
	for i, l := range h.locks {
		l.timerPos = int32(i + 1)
	}
	for i := len(h.locks)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	h.shrink()
	return ticks, now
}

// maxSpare bounds the buffer a timer heap keeps between bursts (1.5 MiB).
const maxSpare = 1 << 16

// keep keeps the cleared buffer of a burst for the next one (the larger,
// when two bursts were fired at once), unless it is larger than maxSpare.
func (h *timerHeap) keep(ticks []lockTick) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cap(ticks) > cap(h.spare) && cap(ticks) <= maxSpare {
		h.spare = ticks[:0]
	}
}

// take appends l's timers due by now to ticks and disarms them; the heap's
// mutex is held, and the caller puts l back in its place.
func (t *lockTimers) take(l *Lock, now time.Duration, ticks []lockTick) []lockTick {
	if t.renewSeq != 0 && t.renewAt <= now {
		ticks = append(ticks, lockTick{lock: l, seq: t.renewSeq, timer: sm.TimerRenewal})
		t.renewSeq = 0
	}
	if t.deadlineSeq != 0 && t.deadlineAt <= now {
		ticks = append(ticks, lockTick{lock: l, seq: t.deadlineSeq, timer: sm.TimerDeadline})
		t.deadlineSeq = 0
	}
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
	i := int(l.timerPos) - 1
	switch {
	case i < 0 && !armed:
		return
	case i < 0:
		h.locks = append(h.locks, l)
		i = len(h.locks) - 1
		l.timerPos = int32(i + 1)
	case !armed:
		last := len(h.locks) - 1
		h.swap(i, last)
		h.locks[last] = nil
		h.locks = h.locks[:last]
		l.timerPos = 0
		if i == last {
			h.shrink()
			return
		}
		l = h.locks[i]
		h.shrink()
	}
	h.up(i)
	h.down(int(l.timerPos) - 1)
}

// shrink gives memory back after many locks left the heap; h.mu is held.
func (h *timerHeap) shrink() {
	if c := cap(h.locks); c > 64 && len(h.locks) < c/4 {
		h.locks = append([]*Lock(nil), h.locks...)
	}
}

func (h *timerHeap) less(i, j int) bool {
	return h.locks[i].timers.due() < h.locks[j].timers.due()
}

func (h *timerHeap) swap(i, j int) {
	h.locks[i], h.locks[j] = h.locks[j], h.locks[i]
	h.locks[i].timerPos = int32(i + 1)
	h.locks[j].timerPos = int32(j + 1)
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

// tick steps l with a due timer at now, its effects in *effects (the
// firing's buffer); the handle ignores a tick whose Seq was disarmed or
// re-armed since.
func (l *Lock) tick(tm sm.Timer, seq uint32, now time.Duration, effects *[]sm.Effect) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stepWith(sm.Input{Kind: sm.InputTimer, Timer: tm, Seq: seq, Now: now}, 0, effects)
}
