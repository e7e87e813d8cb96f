package valkeygo_test

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
	"github.com/respire-go/respire/valkeygo"
)

// Locks over the valkey-go client an application already has. New sends
// nothing; sessions open on first use. Close the Locks before the client.
func ExampleNew() {
	ctx := context.Background()

	// An in-process server for the example; use your Redis address.
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Redis70})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{srv.Addr()}})
	if err != nil {
		panic(err)
	}
	defer client.Close() // deferred calls run last first: the Locks closes before the client

	locks, err := valkeygo.New(client)
	if err != nil {
		panic(err) // ErrNilClient, ErrStandaloneReplicas, or an invalid option
	}
	defer locks.Close()

	lock, err := locks.Acquire(ctx, "report", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		panic(err)
	}
	// Do the work under lock.Context(): it ends, with its cause, before the
	// lease can have ended on the server.
	fmt.Println("held:", lock.Key(), lock.State())
	outcome, err := lock.Release(ctx)
	fmt.Println("release:", outcome, err)
	// Output:
	// held: report Held
	// release: Released <nil>
}

// Locks over a valkey-go Sentinel client: NewSentinel takes the option the
// client was made with, so that the locks also follow every sentinel it
// lists and switch to a new primary as soon as one of them announces it.
// List every sentinel in InitAddress.
func ExampleNewSentinel() {
	option := valkey.ClientOption{
		InitAddress: []string{"10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"},
		Sentinel:    valkey.SentinelOption{MasterSet: "mymaster"},
	}
	client, err := valkey.NewClient(option)
	if err != nil {
		fmt.Println("no sentinels here:", err != nil)
		return
	}
	defer client.Close()
	locks, err := valkeygo.NewSentinel(client, option)
	if err != nil {
		panic(err) // ErrNotSentinel: not a Sentinel client, or not its option
	}
	defer locks.Close()
	// Keep half the lease above Sentinel's announcement delay plus a round
	// trip (docs/deployment.md): 5 s or more with down-after-milliseconds 1000.
	_, _ = locks.Acquire(context.Background(), "report", 10*time.Second, lease.WithKeepAlive())
}

// NewClient is the conn.Client under New, for lease.New and its options
// (New is lease.New(NewClient(client), opts...)).
func ExampleNewClient() {
	ctx := context.Background()
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Redis70})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{srv.Addr()}})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	adapter, err := valkeygo.NewClient(client)
	if err != nil {
		panic(err) // ErrStandaloneReplicas
	}
	locks, err := lease.New(adapter, lease.WithCommandTimeout(2*time.Second))
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	attempt, err := locks.TryAcquire(ctx, "job", time.Minute)
	fmt.Println("acquired:", attempt.Acquired(), err)
	// Output:
	// acquired: true <nil>
}
