package leasetest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
)

// exportReport is the code under test: a job that exports a report one
// batch at a time for as long as its lock is held. It runs under the
// lock's context and stops, with the context's cause, as soon as that
// context ends.
func exportReport(ctx context.Context, exported chan<- int) error {
	for batch := 1; ; batch++ {
		select {
		case <-ctx.Done():
			return fmt.Errorf("export stopped after %d batch(es): %w", batch-1, context.Cause(ctx))
		case exported <- batch: // one batch written
		}
	}
}

// Test that a job stops when its lock is lost: the job runs under
// Lock.Context, another owner steals the key, and the job returns an error
// matching lease.ErrOwnershipLost. In a test, leasetest.Start(t) starts the
// server and closes it, with the Locks, at the end of the test; NewServer
// and Close do the same here.
func Example_jobStopsWhenItsLockIsLost() {
	srv := leasetest.NewServer() // in a test: srv := leasetest.Start(t)
	defer srv.Close()
	locks := srv.Locks().WithKeyPrefix("jobs:")

	ctx := context.Background()
	lock, err := locks.Acquire(ctx, "report", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		panic(err)
	}
	defer lock.Close()

	exported := make(chan int)
	stopped := make(chan error, 1)
	go func() { stopped <- exportReport(lock.Context(), exported) }()
	fmt.Println("exported batch", <-exported)

	// Another owner takes the key (a wire key: the view's prefix included).
	srv.Steal(locks.KeyPrefix() + "report")

	err = <-stopped // within milliseconds: push tells the keep-alive holder
	fmt.Println("job stopped, lock lost:", errors.Is(err, lease.ErrOwnershipLost))
	var loss *lease.LossError
	if errors.As(err, &loss) {
		fmt.Println("how:", loss.Reason)
	}
	fmt.Println("lock state:", lock.State())
	// Output:
	// exported batch 1
	// job stopped, lock lost: true
	// how: read-refused
	// lock state: Lost
}
