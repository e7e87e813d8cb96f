package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/coordination"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// Storage is a protected resource that checks fencing tokens: it accepts a
// write only when its token is at least the largest token it has accepted,
// atomically with the write.
type Storage struct {
	mu        sync.Mutex
	lastToken int64
	value     string
}

var errStale = errors.New("rejected: stale fencing token")

// Write stores value if token is not stale.
func (s *Storage) Write(token int64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token <= 0 || token < s.lastToken {
		return errStale
	}
	s.lastToken, s.value = token, value
	return nil
}

// A holder that stalls past its lease keeps believing it holds the lock;
// the resource still rejects its write because a newer owner's token was
// seen. (The server runs on a manual clock so the example can expire the
// lease without waiting.)
func Example() {
	ctx := context.Background()
	clock := sim.NewManualClock(time.Unix(0, 0))
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Valkey90, Password: "pw", Clock: clock})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, Password: "pw"})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	locks, err := lease.New(client)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	coord, err := coordination.New(client, locks)
	if err != nil {
		panic(err)
	}
	defer coord.Close()

	storage := &Storage{}
	first, err := coord.Acquire(ctx, "{invoice:42}:lease", "{invoice:42}:fence", 30*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("first owner, token", first.FencingToken(), "write:", storage.Write(first.FencingToken(), "draft"))

	clock.Advance(31 * time.Second) // the first owner stalls; its lease expires on the server

	second, err := coord.Acquire(ctx, "{invoice:42}:lease", "{invoice:42}:fence", 30*time.Second)
	if err != nil {
		panic(err)
	}
	defer second.Close()
	fmt.Println("second owner, token", second.FencingToken(), "write:", storage.Write(second.FencingToken(), "final"))

	fmt.Println("first owner wakes up, write:", storage.Write(first.FencingToken(), "stale draft"))
	renewed, _ := first.ResetExpiry(ctx, 30*time.Second)
	fmt.Println("first owner renews:", renewed)
	outcome, _ := first.Release(ctx)
	fmt.Println("first owner releases:", outcome)
	fmt.Println("stored:", storage.value)
	// Output:
	// first owner, token 1 write: <nil>
	// second owner, token 2 write: <nil>
	// first owner wakes up, write: rejected: stale fencing token
	// first owner renews: false
	// first owner releases: NotOwned
	// stored: final
}
