package actor

import "time"

// Clock is the time source for alarms: real time in production, virtual time
// in tests and the simulator. Implementations are safe for concurrent use.
type Clock interface {
	// Now returns monotonic time elapsed since an arbitrary fixed origin.
	Now() time.Duration
	// AfterFunc calls f, in its own goroutine or the clock driver's, once d
	// has elapsed, unless the returned Timer is stopped first. It never
	// blocks and never calls f before returning. Like time.AfterFunc, no
	// goroutine exists until f runs.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call created by [Clock.AfterFunc]. *time.Timer
// implements it.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it
	// did. It does not wait for a call already started.
	Stop() bool
	// Reset re-arms the timer to call f after d; it reports whether the
	// timer was pending. A call already started is not prevented.
	Reset(d time.Duration) bool
}

// realClock reads the process's monotonic clock.
type realClock struct{ origin time.Time }

var realTime = realClock{origin: time.Now()}

// RealClock returns the production [Clock]: Now is monotonic time since
// package initialisation and AfterFunc is time.AfterFunc. It is safe for
// concurrent use and shared by every caller.
func RealClock() Clock { return realTime }

func (c realClock) Now() time.Duration { return time.Since(c.origin) }

func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, f)
}
