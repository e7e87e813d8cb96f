package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// Run a job under a lock: Do acquires it (here waiting up to a second),
// keeps it alive while the job runs under a context that ends if the lock
// is lost, releases it, and says precisely what happened.
func ExampleLocks_Do() {
	ctx := context.Background()

	// An in-process server for the example; use your Redis address.
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Redis84})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client := leasetest.NewClient(srv.Addr(), "") // in a program: your client's adapter (rueidislease, goredis)
	locks, err := lease.New(client)
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	report := func(ctx context.Context) error {
		// ... write the report, checking ctx between steps: it ends, with
		// the cause, as soon as the lock is lost.
		return ctx.Err()
	}
	err = locks.Do(ctx, "locks:report", 30*time.Second, report, lease.WithWait(time.Second))
	switch {
	case errors.Is(err, lease.ErrNotAcquired):
		fmt.Println("another worker holds it")
	case errors.Is(err, lease.ErrLostDuringWork):
		fmt.Println("lost while writing: the report may overlap another worker's:", err)
	case errors.Is(err, lease.ErrOutcomeUnknown):
		fmt.Println("written under the lock; the release's outcome is unknown (it expires anyway)")
	case err != nil:
		fmt.Println("the report failed:", err)
	default:
		fmt.Println("report written under the lock, lock released")
	}
	// Output:
	// report written under the lock, lock released
}
