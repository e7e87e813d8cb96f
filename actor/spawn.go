package actor

import (
	"context"
	"time"

	"github.com/respire-go/respire/conn"
)

// Spawn is how the driver starts work that goes on by itself and how one of
// its goroutines waits for something (conn.Spawn, shared with the wire
// engine): goroutines and channel selects in production ([RealSpawn]), the
// tasks of the simulator's single thread in sim/dst, which decides when each
// task runs and so makes a schedule a pure function of its seed. Everything
// the driver does that could block goes through a Spawn, its [Clock] or the
// transport; nothing else in it starts a goroutine, arms a timer or waits on
// a channel.
type Spawn = conn.Spawn

// RealSpawn returns the production [Spawn] (conn.RealSpawn). It is shared
// and safe for concurrent use.
func RealSpawn() Spawn { return conn.RealSpawn() }

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
