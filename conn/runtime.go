package conn

import (
	"context"
	"time"
)

// This file is the engine's runtime seam, shared with package actor (which
// re-exports it as actor.Clock, actor.Timer and actor.Spawn): everything
// the engine does that could block or needs the time goes through a Clock,
// a Spawn or the Client, so that sim/dst runs the engine that ships on one
// goroutine, on virtual time, with a schedule that is a pure function of
// its seed.

// Clock is the time source: real time in production, virtual time in
// tests and the simulator. Implementations are safe for concurrent use.
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
// concurrent use and shared by every caller; a Clock equal to it (==) is
// real time.
func RealClock() Clock { return realTime }

func (c realClock) Now() time.Duration { return time.Since(c.origin) }

func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, f)
}

// Spawn is how work that goes on by itself is started and how one of its
// goroutines waits for something: goroutines and channel selects in
// production ([RealSpawn]), the tasks of the simulator's single thread in
// sim/dst, which decides when each task runs. Implementations are safe for
// concurrent use.
type Spawn interface {
	// Go runs f concurrently: on a goroutine of its own (production), or
	// as a task the simulation's scheduler starts later. It never blocks.
	Go(f func())
	// Wait blocks until a receive from ready succeeds (it is closed, or a
	// value sent on it is taken), or ctx is done. It returns nil when
	// ready fired, and context.Cause(ctx) when ctx ended first (ready is
	// then left as it was). The caller must not hold a mutex that another
	// task needs.
	Wait(ctx context.Context, ready <-chan struct{}) error
	// AfterFunc arranges for f to run on its own once ctx is done, as
	// context.AfterFunc does; stop undoes that and reports whether it did
	// (false once f was started).
	AfterFunc(ctx context.Context, f func()) (stop func() bool)
}

// RealSpawn returns the production [Spawn]: Go is the go statement, Wait a
// select, AfterFunc context.AfterFunc. It is shared and safe for
// concurrent use.
func RealSpawn() Spawn { return realSpawn{} }

type realSpawn struct{}

func (realSpawn) Go(f func()) { go f() }

func (realSpawn) Wait(ctx context.Context, ready <-chan struct{}) error {
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (realSpawn) AfterFunc(ctx context.Context, f func()) (stop func() bool) {
	return context.AfterFunc(ctx, f)
}

// Bound returns a ctx that parent's end or clock after d ends: on the real
// clock a deadline (context.WithTimeout, so that a client bounding its I/O
// by ctx's deadline sees it), on any other clock a timer of that clock whose
// cause is context.DeadlineExceeded, so that the bound falls on the clock's
// time (a simulation's virtual time).
func Bound(clock Clock, parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if clock == Clock(realTime) {
		return context.WithTimeout(parent, d)
	}
	ctx, cancel := context.WithCancelCause(parent)
	timer := clock.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() {
		timer.Stop()
		cancel(nil)
	}
}
