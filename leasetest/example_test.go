package leasetest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// A server that stalls past a holder's lease: the keep-alive's renewal
// waits unanswered, and the holder gives the lock up at its lease's end by
// its own clock, so the work under Lock.Context stops before another owner
// can take the key. After Resume, the release finds the lock already lost.
func ExampleServer_Pause() {
	srv := leasetest.NewServer(leasetest.WithProfile(sim.Valkey90)) // in a test: leasetest.Start(t, ...)
	defer srv.Close()
	locks := srv.Locks()

	ctx := context.Background()
	lock, err := locks.Acquire(ctx, "locks:report", 500*time.Millisecond, lease.WithKeepAlive())
	if err != nil {
		panic(err)
	}
	defer lock.Close()

	srv.Pause() // the renewal due in about 250ms will wait
	work := lock.Context()
	select {
	case <-work.Done(): // at the lease's end (500ms minus the drift margin)
		fmt.Println("work stopped, lock lost:", errors.Is(context.Cause(work), lease.ErrOwnershipLost))
	case <-time.After(10 * time.Second):
		fmt.Println("the lock outlived the stall")
	}

	srv.Resume()
	outcome, err := lock.Release(ctx)
	fmt.Println("release after the stall:", outcome, err)
	// Output:
	// work stopped, lock lost: true
	// release after the stall: NotOwned <nil>
}
