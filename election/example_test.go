package election_test

import (
	"context"
	"fmt"
	"time"

	"github.com/respire-go/respire/election"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// Two services campaign for one election: the first leads at once, the
// second waits and leads as soon as the first resigns; an observer sees
// each new leader.
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

	if err := a.Campaign(ctx, "scheduler-a"); err != nil {
		panic(err)
	}
	leaders := b.Observe(ctx)
	fmt.Println("leader:", <-leaders)

	won := make(chan error, 1)
	go func() { won <- b.Campaign(ctx, "scheduler-b") }()

	// The leader's work runs under its leadership's context, which ends
	// as soon as the leadership does (resigned, lost, not renewed in time).
	work := a.Context()
	if err := a.Resign(ctx); err != nil {
		panic(err)
	}
	fmt.Println("a's leadership ended:", context.Cause(work))
	if err := <-won; err != nil {
		panic(err)
	}
	fmt.Println("leader:", <-leaders)
	label, _ := a.Leader(ctx)
	fmt.Println("Leader():", label)
	_ = b.Resign(ctx)
	// Output:
	// leader: scheduler-a
	// a's leadership ended: lease: released
	// leader: scheduler-b
	// Leader(): scheduler-b
}
