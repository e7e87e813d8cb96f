package election_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/respire-go/respire/election"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// Two services campaign for one election: the first leads at once, then
// resigns, and the second leads; an observer sees each state in turn.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// An in-process server for the example; use your Redis address.
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Valkey90})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	candidate := func() (*election.Election, func()) {
		// In a program: locks, err := rueidislease.New(client) (or goredis.New).
		locks, err := lease.New(leasetest.NewClient(srv.Addr(), ""))
		if err != nil {
			panic(err)
		}
		e, err := election.New(locks, "elections:scheduler", 4*time.Second)
		if err != nil {
			panic(err)
		}
		return e, locks.Close
	}
	a, closeA := candidate()
	defer closeA()
	b, closeB := candidate()
	defer closeB()

	states := b.Observe(ctx)
	fmt.Println(<-states)
	if err := a.Campaign(ctx, "scheduler-a"); err != nil {
		panic(err)
	}
	fmt.Println(<-states)

	// The leader's work runs under its leadership's context, which ends
	// as soon as the leadership does (resigned, lost, not renewed in time)
	// or ctx does, whichever comes first.
	work, stop := a.ContextFrom(ctx)
	defer stop()
	if err := a.Resign(ctx); err != nil {
		panic(err)
	}
	fmt.Println("a's work ended:", context.Cause(work))
	fmt.Println(<-states)

	if err := b.Campaign(ctx, "scheduler-b"); err != nil {
		panic(err)
	}
	fmt.Println(<-states)
	label, _ := a.Leader(ctx)
	fmt.Println("Leader():", label)
	_ = b.Resign(ctx)
	// Output:
	// no leader
	// leader "scheduler-a"
	// a's work ended: lease: released
	// no leader
	// leader "scheduler-b"
	// Leader(): scheduler-b
}

// A service that runs a scheduler while it leads, and stops on SIGTERM:
// the scheduler's context ends with the signal or with the leadership,
// whichever comes first, and the deferred Resign hands the leadership on
// at once instead of after the lease. (The election package's
// TestElectionStopsOnShutdown_SIGTERM runs this program in a child process
// and signals it.)
func ExampleElection_ContextFrom() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	client := leasetest.NewClient("127.0.0.1:6379", "") // in a program: your client's adapter (rueidislease, goredis)
	locks, err := lease.New(client)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	hostname, _ := os.Hostname()
	runScheduler := func(ctx context.Context) error { <-ctx.Done(); return nil } // your work

	lead := func(ctx context.Context) error {
		e, err := election.New(locks, "elections:scheduler", 4*time.Second)
		if err != nil {
			return err
		}
		if err := e.Campaign(ctx, hostname); err != nil {
			return err // ctx's cause when SIGTERM came first
		}
		defer e.Resign(context.WithoutCancel(ctx)) // hands over at once
		work, cancel := e.ContextFrom(ctx)         // ends on SIGTERM or when the leadership does
		defer cancel()
		return runScheduler(work)
	}
	if err := lead(ctx); err != nil {
		log.Print(err)
	}
}
