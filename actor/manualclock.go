package actor

import (
	"slices"
	"sync"
	"time"
)

// ManualClock is a [Clock] whose time moves only when Advance is called, for
// deterministic tests of code that uses alarms. Timer callbacks run
// synchronously inside Advance, on the caller's goroutine, in due order.
//
// It is safe for concurrent use. The zero value is a clock at time zero with
// no timers. A ManualClock must not be copied after first use.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers []*manualTimer // pending timers, unordered
}

type manualTimer struct {
	clock *ManualClock
	due   time.Duration
	f     func()
}

// Now returns the virtual time.
func (c *ManualClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc registers f to run when Advance reaches Now()+d. It never blocks.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	t := &manualTimer{clock: c, f: f}
	t.Reset(d)
	return t
}

// Pending reports how many timers are armed.
func (c *ManualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves time forward by d and runs, one at a time and in due order,
// every callback whose time has come, including ones armed by those
// callbacks. It blocks until they have all returned.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now + d
	c.mu.Unlock()
	for {
		c.mu.Lock()
		t := c.popDue(target)
		if t == nil {
			c.now = target
			c.mu.Unlock()
			return
		}
		c.now = max(c.now, t.due)
		c.mu.Unlock()
		t.f()
	}
}

// popDue removes and returns the earliest timer due by target; c.mu is held.
func (c *ManualClock) popDue(target time.Duration) *manualTimer {
	i := -1
	for j, t := range c.timers {
		if t.due <= target && (i < 0 || t.due < c.timers[i].due) {
			i = j
		}
	}
	if i < 0 {
		return nil
	}
	t := c.timers[i]
	c.timers = slices.Delete(c.timers, i, i+1)
	return t
}

// removeLocked unregisters t and reports whether it was pending; c.mu is held.
func (c *ManualClock) removeLocked(t *manualTimer) bool {
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	return true
}

func (t *manualTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.clock.removeLocked(t)
}

func (t *manualTimer) Reset(d time.Duration) bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	pending := c.removeLocked(t)
	t.due = c.now + d
	c.timers = append(c.timers, t)
	return pending
}
