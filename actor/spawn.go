package actor

import (
	"context"
	"time"
)

// Spawn is how the driver starts work that goes on by itself and how one of
// its goroutines waits for something: goroutines and channel selects in
// production ([RealSpawn]), the tasks of the simulator's single thread in
// sim/dst, which decides when each task runs and so makes a schedule a
// pure function of its seed. Everything the driver does that could block
// goes through a Spawn, its [Clock] or the transport; nothing else in it
// starts a goroutine, arms a timer or waits on a channel.
//
// Implementations are safe for concurrent use.
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

// Sleep waits d on clock, or until ctx ends (returning its cause), through
// spawn: a timer of clock closes the channel Wait watches.
func Sleep(ctx context.Context, spawn Spawn, clock Clock, d time.Duration) error {
	woken := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(woken) })
	err := spawn.Wait(ctx, woken)
	if err != nil {
		t.Stop()
	}
	return err
}
