package dst

import (
	"time"

	"github.com/respire-go/respire/actor"
)

// virtualClock is process p's actor.Clock: its drifting monotonic clock
// (process.local), with timers that are events of the scheduler. A timer's
// callback runs on the scheduler's own code and must not block.
type virtualClock struct {
	w *world
	p *process
}

func (c *virtualClock) Now() time.Duration { return c.p.local(c.w.now) }

func (c *virtualClock) AfterFunc(d time.Duration, f func()) actor.Timer {
	t := &virtualTimer{c: c, f: f}
	t.Reset(d)
	return t
}

// virtualTimer is one pending callback of a virtualClock.
type virtualTimer struct {
	c  *virtualClock
	f  func()
	ev *event
}

func (t *virtualTimer) Stop() bool {
	if t.ev == nil || t.ev.cancelled {
		return false
	}
	t.ev.cancelled = true
	return true
}

func (t *virtualTimer) Reset(d time.Duration) bool {
	pending := t.Stop()
	w, p := t.c.w, t.c.p
	t.ev = w.schedule(p, p.trueAt(p.local(w.now)+max(d, 0)), t.f)
	return pending
}
