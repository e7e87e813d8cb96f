package lease_test

import (
	"context"
	"fmt"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// A waiting acquisition tries again as soon as the holder releases (the
// server's invalidation push wakes it), long before its retry interval;
// the interval stays as a safety net. WithoutPush would make it poll.
func ExampleWithoutPush() {
	ctx := context.Background()

	// An in-process server for the example; use your Redis address.
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Redis70})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	client := leasetest.NewClient(srv.Addr(), "") // in a program: your client's adapter (rueidislease, goredis)
	locks, err := lease.New(client)               // push on; lease.New(client, lease.WithoutPush()) polls
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	holder, err := locks.Acquire(ctx, "locks:report", 30*time.Second)
	if err != nil {
		panic(err)
	}
	time.AfterFunc(100*time.Millisecond, func() { _, _ = holder.Release(ctx) })

	start := time.Now()
	lock, err := locks.Acquire(ctx, "locks:report", 30*time.Second,
		lease.WithWait(time.Minute), lease.WithRetryEvery(30*time.Second))
	if err != nil {
		panic(err)
	}
	defer lock.Close()
	fmt.Println("acquired well before the retry interval:", time.Since(start) < 15*time.Second)
	// Output:
	// acquired well before the retry interval: true
}
