package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// A worker pool capped across processes: however many workers run, on
// however many machines, at most 3 of them call the rate-limited partner
// API at once. Each worker takes a permit of the shared semaphore before
// its job and gives it back after; its keep-alive renews the permit while
// the job runs, and the job runs under the permit's Context, which ends if
// the permit is ever lost. A worker whose process dies frees its permit
// when its lease ends (10 s here), by the server's clock.
func ExampleSemaphore() {
	ctx := context.Background()

	// An in-process server for the example; use your Redis address.
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Redis84})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	var running, most atomic.Int64 // what the partner API would see
	callPartner := func(ctx context.Context) error {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-time.After(20 * time.Millisecond): // the call
			return nil
		case <-ctx.Done(): // the permit was lost: stop at once
			return context.Cause(ctx)
		}
	}

	// Two "processes", each with its own client and Locks, 5 workers each.
	var done atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		client := leasetest.NewClient(srv.Addr(), "") // in a program: your client's adapter (rueidislease, goredis)
		locks, err := lease.New(client)
		if err != nil {
			panic(err)
		}
		defer locks.Close()
		partner := locks.Semaphore("partner-api", 3) // every process must use the same limit

		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				permit, err := partner.Acquire(ctx, 10*time.Second, lease.WithKeepAlive(), lease.WithWaitUntilDone())
				if err != nil {
					fmt.Println("no permit:", err) // ErrLimitMismatch if a process used another limit
					return
				}
				defer permit.Close() // gives the permit back
				if err := callPartner(permit.Context()); err == nil {
					done.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	fmt.Println("jobs done:", done.Load())
	fmt.Println("never more than 3 at once:", most.Load() <= 3)
	// Output:
	// jobs done: 10
	// never more than 3 at once: true
}

// A reader-heavy cache rebuilt by a writer: many readers serve from a
// cache that lives outside the process (two parts here, written one after
// the other), and a rebuild must never be seen half done. Readers share the
// lock; the rebuilder takes it for writing, which waits for the readers
// already in and keeps new ones out meanwhile (writer preference: readers
// that keep coming cannot starve it). Readers wait with WithWaitUntilDone
// and are woken when the writer leaves.
func ExampleRWLock() {
	ctx := context.Background()

	// An in-process server for the example; use your Redis address.
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Valkey90})
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
	cacheLock := locks.RWLock("catalog-cache")

	var mu sync.Mutex // stands for the cache's storage; the RWLock is what keeps it whole
	index, body := "v1", "v1"
	read := func() (string, string) { mu.Lock(); defer mu.Unlock(); return index, body }
	write := func(i, b string) { mu.Lock(); defer mu.Unlock(); index, body = i, b }

	var torn atomic.Bool
	serve := func() error {
		hold, err := cacheLock.RLock(ctx, 5*time.Second, lease.WithWaitUntilDone())
		if err != nil {
			return err
		}
		defer hold.Close()
		if i, b := read(); i != b {
			torn.Store(true) // a half-rebuilt cache: what the lock prevents
		}
		return nil
	}

	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 8 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := serve(); err != nil {
					fmt.Println("serve:", err)
					return
				}
			}
		}()
	}

	rebuild, err := cacheLock.Lock(ctx, 5*time.Second, lease.WithWait(10*time.Second))
	switch {
	case errors.Is(err, lease.ErrNotAcquired):
		fmt.Println("readers held the cache for 10 s; rebuild later")
	case err != nil:
		panic(err)
	default:
		write("v2", "") // the rebuild, in two steps no reader may see apart
		time.Sleep(10 * time.Millisecond)
		write("v2", "v2")
		if _, err := rebuild.Release(ctx); err != nil {
			fmt.Println("release:", err)
		}
	}
	close(stop)
	readers.Wait()
	i, _ := read()
	fmt.Println("cache:", i)
	fmt.Println("a reader saw a half-built cache:", torn.Load())
	// Output:
	// cache: v2
	// a reader saw a half-built cache: false
}
