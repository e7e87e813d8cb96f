package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// A job updates a Redis hash only while it holds the lock: each update is
// a guarded write, which the server runs only while the lock's key still
// holds the job's token. A job that stalls past its lease — and so never
// learns that another job took over — is refused with nothing written,
// and its lock ends there. (The example runs on an in-process simulated
// Redis whose clock is manual, so that it can expire the lease without
// waiting.)
func ExampleLock_Guard() {
	ctx := context.Background()
	clock := sim.NewManualClock(time.Unix(0, 0))
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Redis84, Clock: clock})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	locks, err := lease.New(client)
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

	fields, err := client.Do(ctx, client.B().Hgetall().Key(state).Build()).AsStrMap()
	if err != nil {
		panic(err)
	}
	fmt.Println("state:", fields["status"], fields["owner"], "attempts", fields["attempts"])
	// Output:
	// job-1 writes: <nil>
	// job-2 writes: <nil>
	// job-1 writes again: true Lost
	// state: sent job-2 attempts 1
}
