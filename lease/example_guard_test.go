package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"strings"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// A job updates a Redis hash only while it holds the lock: each update is
// a guarded write, which the server runs only while the lock's key still
// holds the job's token. A job that stalls past its lease — and so never
// learns that another job took over — is refused with nothing written,
// and its lock ends there. (The example runs on an in-process simulated
// Redis whose clock is manual, so that it can expire the lease without
// waiting; a program takes its client from its Redis client's adapter:
// rueidislease.New, goredis.New or valkeygo.New.)
func ExampleLock_Guard() {
	ctx := context.Background()
	clock := sim.NewManualClock(time.Unix(0, 0))
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Redis84, Clock: clock})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	locks, err := lease.New(leasetest.NewClient(srv.Addr(), "")) // in a program: rueidislease.New(client)
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	// The lock key and the hash share a hash tag, so that one script can
	// touch both (in cluster mode they must live in one slot).
	const lockKey, state = "{invoice:42}:lock", "{invoice:42}:state"
	first, err := locks.Acquire(ctx, lockKey, 30*time.Second)
	if err != nil {
		panic(err)
	}
	err = first.Guard(ctx,
		lease.Command("HSET", state, "status", "rendering", "owner", "job-1"),
		lease.Command("HINCRBY", state, "attempts", "1"))
	fmt.Println("job-1 writes:", err)

	clock.Advance(31 * time.Second) // job-1 stalls (GC, swap, a paused VM); its lease expires on the server

	second, err := locks.Acquire(ctx, lockKey, 30*time.Second)
	if err != nil {
		panic(err)
	}
	defer second.Close()
	fmt.Println("job-2 writes:", second.Guard(ctx, lease.Command("HSET", state, "status", "sent", "owner", "job-2")))

	// job-1 resumes. Its own clock did not see the pause (the estimate is
	// local), so it still believes it holds the lock; the server refuses.
	err = first.Guard(ctx, lease.Command("HSET", state, "status", "rendered", "owner", "job-1"))
	fmt.Println("job-1 writes again:", errors.Is(err, lease.ErrOwnershipLost), first.State())

	fmt.Println("state:", hget(srv, state, "status"), hget(srv, state, "owner"), "attempts", hget(srv, state, "attempts"))
	// Output:
	// job-1 writes: <nil>
	// job-2 writes: <nil>
	// job-1 writes again: true Lost
	// state: sent job-2 attempts 1
}

// hget reads one field of a hash on the example's server (in a program:
// your client's HGET).
func hget(srv *sim.Server, key, field string) string {
	reply := strings.Split(srv.Exec("HGET", key, field), "\r\n") // "$4", "sent", ""
	if len(reply) < 2 {
		return ""
	}
	return reply[1]
}
