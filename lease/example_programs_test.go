package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// A job runner: four workers (goroutines here, usually processes) compete
// for three jobs. Whoever takes a job's lock runs it under the lock's
// context and records it as done on the server; the others skip a job that
// is taken, and nobody runs a job that is done. The keep-alive renews each
// job's lease for as long as the job runs.
func Example_jobRunner() {
	ctx := context.Background()

	// An in-process server for the example; use your Redis address.
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Valkey90})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}}) // the program's own client
	if err != nil {
		panic(err)
	}
	defer client.Close() // after the Locks (deferred calls run last first)
	// In a program: root, err := rueidislease.New(client) (or goredis.New).
	root, err := lease.New(leasetest.NewClient(srv.Addr(), ""))
	if err != nil {
		panic(err)
	}
	defer root.Close()
	locks := root.WithKeyPrefix("jobs:")

	jobs := []string{"invoices", "reminders", "cleanup"}

	// Bookkeeping for the summary: how often each job ran, whether two
	// workers ever ran the same job at once, and anything that went wrong.
	var (
		mu       sync.Mutex
		runs     = map[string]int{}
		running  = map[string]int{}
		overlaps int
		problems []string
	)
	problem := func(job string, err error) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, job+": "+err.Error())
	}

	// The job itself: 100ms of work that stops early if ctx ends. It
	// returns ctx's cause, nil while the lease lasts, so that a job whose
	// lock was lost is not recorded as done.
	runJob := func(ctx context.Context, job string) error {
		mu.Lock()
		runs[job]++
		if running[job]++; running[job] > 1 {
			overlaps++
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			running[job]--
			mu.Unlock()
		}()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		return context.Cause(ctx)
	}

	worker := func(first int) {
		for i := range jobs {
			job := jobs[(first+i)%len(jobs)] // workers start at different jobs

			attempt, err := locks.TryAcquire(ctx, job, 10*time.Second, lease.WithKeepAlive())
			if err != nil {
				problem(job, err)
				continue
			}
			if !attempt.Acquired() {
				continue // another worker is running it
			}
			lock := attempt.Lock()

			// Run the job under the lock's context, unless it is done.
			doneKey := "jobs:" + job + ":done"
			done, err := client.Do(ctx, client.B().Exists().Key(doneKey).Build()).AsBool()
			if err == nil && !done {
				if err = runJob(lock.Context(), job); err == nil {
					err = client.Do(ctx, client.B().Set().Key(doneKey).Value("1").Build()).Error()
				}
			}
			if err != nil {
				problem(job, err)
			}

			// Release, not Close: NotOwned would say that the lock was lost
			// while the job ran.
			if outcome, err := lock.Release(ctx); outcome != lease.Released {
				problem(job, fmt.Errorf("release: %v, %v", outcome, err))
			}
		}
	}

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() { worker(w) })
	}
	wg.Wait()

	for _, job := range jobs {
		fmt.Printf("%s ran %d time(s)\n", job, runs[job])
	}
	fmt.Println("overlapping runs:", overlaps)
	fmt.Println("problems:", problems)
	// Output:
	// invoices ran 1 time(s)
	// reminders ran 1 time(s)
	// cleanup ran 1 time(s)
	// overlapping runs: 0
	// problems: []
}

// Leader election: three instances of a service campaign for one lock, and
// the holder leads while lock.Context() lives. Each instance waits for the
// lock as long as it runs (WithWaitUntilDone), leads with a keep-alive,
// steps down with Close, and campaigns again if it lost the lead. Here each
// instance leads for one term and then shuts down, as in a rolling restart,
// so the lead passes from one instance to the next.
func Example_leaderElection() {
	ctx, shutdown := context.WithTimeout(context.Background(), 10*time.Second)
	defer shutdown()

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

	// Bookkeeping for the summary: terms served, and how many instances
	// ever led at the same time.
	var (
		mu         sync.Mutex
		terms      = map[string]int{}
		leading    int
		maxLeading int
	)

	// The leader's work: one term of 100ms, cut short if the lead is lost.
	lead := func(ctx context.Context, name string) error {
		mu.Lock()
		terms[name]++
		leading++
		maxLeading = max(maxLeading, leading)
		mu.Unlock()
		defer func() {
			mu.Lock()
			leading--
			mu.Unlock()
		}()
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
			return nil
		}
	}

	instance := func(name string) {
		for {
			lock, err := locks.Acquire(ctx, "service:leader", 10*time.Second,
				lease.WithWaitUntilDone(), lease.WithKeepAlive(), lease.WithRetryEvery(20*time.Millisecond))
			if err != nil {
				return // ctx ended: the instance is shutting down
			}
			err = lead(lock.Context(), name)
			_ = lock.Close() // step down: stops the keep-alive, then releases
			if errors.Is(err, lease.ErrOwnershipLost) {
				continue // lost the lead: campaign again
			}
			return // the term is over: this instance shuts down
		}
	}

	var wg sync.WaitGroup
	for _, name := range []string{"a", "b", "c"} {
		wg.Go(func() { instance(name) })
	}
	wg.Wait()

	fmt.Println("terms:", terms["a"]+terms["b"]+terms["c"])
	fmt.Println("every instance led once:", terms["a"] == 1 && terms["b"] == 1 && terms["c"] == 1)
	fmt.Println("one leader at a time:", maxLeading == 1)
	// Output:
	// terms: 3
	// every instance led once: true
	// one leader at a time: true
}
