package lease_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// A fair job queue: workers that ask for the lock of a job queue with
// WithFairWait are served in the order they asked, each once the one
// before it released — no worker starves, and a worker that dies holds the
// line up for at most its waiter lease (WithWaiterLease), never for the
// lock's TTL. WithQueuePosition tells each worker its place while it waits.
func ExampleWithFairWait() {
	ctx := context.Background()
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Redis84})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks, err := lease.New(leasetest.NewClient(srv.Addr(), "")) // in a program: your client's adapter
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	// The current holder: the workers below queue behind it.
	first, err := locks.Acquire(ctx, "queue:invoices", time.Minute, lease.WithFairWait())
	if err != nil {
		panic(err)
	}
	var (
		mu     sync.Mutex
		served []string
		wg     sync.WaitGroup
	)
	for _, worker := range []string{"w1", "w2", "w3"} {
		placed := make(chan int, 8)
		wg.Go(func() {
			lock, err := locks.Acquire(ctx, "queue:invoices", time.Minute, lease.WithFairWait(),
				lease.WithWaitUntilDone(), lease.WithWaiterLease(time.Second), lease.WithOwner(worker),
				lease.WithQueuePosition(func(p int) {
					select {
					case placed <- p:
					default:
					}
				}))
			if err != nil {
				panic(err)
			}
			mu.Lock()
			served = append(served, worker) // ... process the next invoice batch under the lock ...
			mu.Unlock()
			if _, err := lock.Release(ctx); err != nil {
				panic(err)
			}
		})
		fmt.Printf("%s waits at place %d\n", worker, <-placed) // start the next worker once this one has its ticket
	}
	n, err := locks.Waiters(ctx, "queue:invoices")
	if err != nil {
		panic(err)
	}
	fmt.Println("waiters:", n)
	if _, err := first.Release(ctx); err != nil { // hands the lock to w1, in the same script
		panic(err)
	}
	wg.Wait()
	fmt.Println("served in order:", served)
	// Output:
	// w1 waits at place 1
	// w2 waits at place 2
	// w3 waits at place 3
	// waiters: 3
	// served in order: [w1 w2 w3]
}

// Who holds what: List walks every primary (SCAN) and reports each lock's
// owner label (WithOwner), the lease it has left, its fair waiters, and a
// semaphore's permits and limit — never a token. lockctl ls and lockctl
// top print the same from the command line.
func ExampleLocks_List() {
	ctx := context.Background()
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Redis84})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks, err := lease.New(leasetest.NewClient(srv.Addr(), ""))
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	jobs := locks.WithKeyPrefix("jobs:")

	backup, err := jobs.Acquire(ctx, "backup", time.Minute, lease.WithOwner("host=db7 pid=4242"))
	if err != nil {
		panic(err)
	}
	defer backup.Close()
	export := jobs.Semaphore("exports", 4)
	permit, err := export.Acquire(ctx, time.Minute)
	if err != nil {
		panic(err)
	}
	defer permit.Close()

	infos, err := jobs.List(ctx, "*")
	if err != nil {
		panic(err)
	}
	for _, in := range infos {
		switch in.Kind {
		case lease.KindMutex:
			fmt.Printf("%s %s held by %q, about %v left, %d waiting\n", in.Kind, in.Key, in.Owner,
				in.Remaining.Round(time.Minute), in.Waiters)
		case lease.KindSemaphore:
			fmt.Printf("%s %s: %d of %d permits in use\n", in.Kind, in.Key, in.Holders, in.Limit)
		}
	}
	// Output:
	// mutex backup held by "host=db7 pid=4242", about 1m0s left, 0 waiting
	// semaphore exports: 1 of 4 permits in use
}
