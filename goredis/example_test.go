package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/respire-go/respire/goredis"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// Locks over the go-redis client an application already has: the same
// lease.Locks as lease.New gives on rueidis, so the same code runs on
// either client. New sends nothing; sessions open on first use. Close the
// Locks before the client.
func ExampleNew() {
	ctx := context.Background()

	// An in-process server for the example; use your Redis address.
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Redis70})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	// The client at its defaults but one: the adapter turns retries off for
	// its own commands and needs read and write deadlines (the defaults
	// have). Maintenance notifications off unless your server sends them:
	// go-redis v9.23's default (auto) races inside go-redis on servers
	// without them (docs/compatibility.md), as Redis < 8, Valkey and the
	// simulator are.
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(),
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	defer client.Close() // deferred calls run last first: the Locks closes before the client

	root, err := goredis.New(client, lease.WithCommandTimeout(2*time.Second))
	if err != nil {
		panic(err) // ErrUnsupportedClient, ErrUnboundedIO, or an invalid option
	}
	defer root.Close()
	locks := root.WithKeyPrefix("myapp:")

	lock, err := locks.Acquire(ctx, "report", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		panic(err)
	}
	// Do the work under lock.Context(): it ends, with its cause, before the
	// lease can have ended on the server.
	fmt.Println("held:", lock.Key(), lock.State(), lock.Context().Err() == nil)

	// Another owner is refused while the lease lasts.
	attempt, err := locks.TryAcquire(ctx, "report", 30*time.Second)
	fmt.Println("a second owner:", attempt.Acquired(), err)
	_, err = locks.Acquire(ctx, "report", 30*time.Second)
	fmt.Println("Acquire:", errors.Is(err, lease.ErrNotAcquired))

	if out, err := lock.Release(ctx); err != nil || out != lease.Released {
		panic(fmt.Sprint(out, err))
	}
	again, err := locks.Acquire(ctx, "report", 30*time.Second)
	if err != nil {
		panic(err)
	}
	defer again.Close()
	fmt.Println("after the release:", again.State())
	// Output:
	// held: report Held true
	// a second owner: false <nil>
	// Acquire: true
	// after the release: Held
}

// A *redis.ClusterClient works as it is: each lock's commands go to the
// primary of its key's slot, and MOVED or ASK is followed. For Sentinel,
// pass the *redis.Client of redis.NewFailoverClient: sessions follow the
// master Sentinel names.
func ExampleNew_cluster() {
	ctx := context.Background()

	// An in-process 3-node cluster for the example; use your nodes' addresses.
	cluster, err := sim.StartCluster(ctx, sim.ClusterConfig{Profiles: []sim.Profile{sim.Redis70, sim.Redis70, sim.Redis70}})
	if err != nil {
		panic(err)
	}
	defer cluster.Close()

	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(),
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	defer client.Close()

	locks, err := goredis.New(client)
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	for _, key := range []string{"invoice:1", "invoice:2", "invoice:3"} {
		lock, err := locks.Acquire(ctx, key, 10*time.Second)
		if err != nil {
			panic(err)
		}
		fmt.Println(lock.Key(), lock.State())
		_ = lock.Close()
	}
	// Output:
	// invoice:1 Held
	// invoice:2 Held
	// invoice:3 Held
}

// Tests of code that takes a *lease.Locks: package leasetest's
// Server.Locks needs no Redis client (it runs on respire-go's own), so it
// is the same for go-redis users as for everyone; to run the test over
// go-redis itself, connect a redis.Client with the server's Addr and
// Password and pass it to New. Either Locks sees the kit's faults.
func ExampleNew_leasetest() {
	srv := leasetest.NewServer() // in a test: srv := leasetest.Start(t), closed at test end
	defer srv.Close()

	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: srv.Password(),
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	defer client.Close()
	locks, err := goredis.New(client) // or: locks := srv.Locks()
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	ctx := context.Background()
	lock, err := locks.Acquire(ctx, "locks:report", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		panic(err)
	}
	defer lock.Close()
	srv.Steal("locks:report") // another owner's token in the key
	<-lock.Context().Done()   // at once: the keep-alive holder learns it by push
	fmt.Println("lost:", errors.Is(context.Cause(lock.Context()), lease.ErrOwnershipLost))
	// Output:
	// lost: true
}
