package actor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
)

// standaloneOnly is a transport that answers Cluster and nothing else: New
// asks only that.
type standaloneOnly struct{ conn.Transport }

func (standaloneOnly) Cluster() bool { return false }

// SetPrimarySwitchHandler: New registers one; a standalone transport never calls it.
func (standaloneOnly) SetPrimarySwitchHandler(func(old, now string)) {}

// TestSimulatorRunsTheShippedDriver_CommandTimeoutIsATimerOfTheClock: the
// command timeout of a driver on a clock other than the real one is a
// timer of that clock (a simulation's virtual time), so it ends exactly
// when the clock passes it, with context.DeadlineExceeded as the cause,
// and never on wall-clock time; on the real clock it stays a deadline.
func TestSimulatorRunsTheShippedDriver_CommandTimeoutIsATimerOfTheClock(t *testing.T) {
	clock := &ManualClock{}
	d := New(Config{Transport: standaloneOnly{}, Clock: clock, CommandTimeout: time.Hour})
	ctx, cancel := d.commandContext(context.Background())
	defer cancel()
	clock.Advance(time.Hour - time.Nanosecond)
	if ctx.Err() != nil {
		t.Fatalf("the command ended %v before its timeout on the driver's clock", ctx.Err())
	}
	clock.Advance(time.Nanosecond)
	if ctx.Err() == nil || !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("after the timeout on the driver's clock: Err %v, cause %v; want the cause DeadlineExceeded",
			ctx.Err(), context.Cause(ctx))
	}
	cancel()
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timer(s) left on the clock after the command ended", n)
	}
	real := New(Config{Transport: standaloneOnly{}, CommandTimeout: time.Hour})
	ctx, cancel = real.commandContext(context.Background())
	defer cancel()
	if _, ok := ctx.Deadline(); !ok {
		t.Fatal("on the real clock the command timeout is no longer a deadline")
	}
}
