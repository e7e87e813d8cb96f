package actor

import (
	"sync"
	"time"
)

// Alarm delivers a tick message to a mailbox at a chosen time, reusing one
// [Clock.AfterFunc] timer for its whole life, so an idle armed alarm costs a
// timer and no goroutine.
//
// Every Arm and Stop starts a new generation; the tick carries the generation
// it was armed with, and the handler must drop a tick for which Current
// reports false. Together with the armed flag checked when the timer fires,
// this guarantees: after Stop returns true no tick of that arming is
// delivered at all, and after any Stop or re-Arm no tick from before it is
// ever reported Current.
//
// Methods are safe for concurrent use, though a handle normally calls Arm,
// Stop and Current only from its handler. Create it with [NewAlarm]; the zero
// value is not usable, and an Alarm must not be copied.
type Alarm[M any] struct {
	clock   Clock
	mailbox *Mailbox[M]
	tick    func(generation uint64) M

	mu         sync.Mutex
	timer      Timer         // created on first Arm, then only Reset
	generation uint64        // current arming; bumped by Arm and Stop
	due        time.Duration // clock.Now() at or after which the tick is due
	armed      bool          // armed and its tick not yet claimed by fire
}

// NewAlarm returns a disarmed alarm whose ticks, built by tick, are delivered
// to mailbox with [Mailbox.Deliver] (so a full mailbox never drops a tick).
// It allocates no timer until the first Arm.
func NewAlarm[M any](clock Clock, mailbox *Mailbox[M], tick func(generation uint64) M) *Alarm[M] {
	return &Alarm[M]{clock: clock, mailbox: mailbox, tick: tick}
}

// Arm schedules one tick after d (d <= 0 means as soon as possible),
// replacing any earlier arming, whose tick will no longer be Current. It
// returns the new generation. It never blocks.
func (a *Alarm[M]) Arm(d time.Duration) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.generation++
	a.armed = true
	a.due = a.clock.Now() + d
	if a.timer == nil {
		a.timer = a.clock.AfterFunc(d, a.fire)
	} else {
		a.timer.Reset(d)
	}
	return a.generation
}

// Stop disarms the alarm. It reports true if the current arming had not yet
// fired: then its tick is never delivered. On false, a tick may already be
// queued or about to be, but Current reports false for it. It never blocks
// and never waits for a running timer callback.
func (a *Alarm[M]) Stop() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	wasArmed := a.armed
	a.armed = false
	a.generation++
	if a.timer != nil {
		a.timer.Stop()
	}
	return wasArmed
}

// Current reports whether a tick of the given generation belongs to the
// latest arming and that arming was not stopped since. The handler calls it
// first for every tick it receives and ignores the tick on false.
func (a *Alarm[M]) Current(generation uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return generation == a.generation
}

// fire runs on the timer's goroutine. A callback from an earlier arming can
// run late, after a re-Arm; it finds the new arming not yet due and re-arms
// the timer for the remainder instead of delivering early. The armed flag is
// claimed under the lock, so exactly one tick leaves per arming.
func (a *Alarm[M]) fire() {
	a.mu.Lock()
	if !a.armed {
		a.mu.Unlock()
		return
	}
	if remaining := a.due - a.clock.Now(); remaining > 0 {
		a.timer.Reset(remaining)
		a.mu.Unlock()
		return
	}
	a.armed = false
	generation := a.generation
	a.mu.Unlock()
	// A stopped mailbox refuses the tick; nothing is waiting for it then.
	_ = a.mailbox.Deliver(a.tick(generation))
}
