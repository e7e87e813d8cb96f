package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/respire-go/respire/coordination"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// A holder that stalls past its lease keeps believing it holds the lock;
// the protected resource still rejects its write, because it has seen a
// newer owner's token. (The example runs on an in-process simulated Valkey
// whose clock is manual, so that it can expire the lease without waiting.)
func Example() {
	ctx := context.Background()
	clock := sim.NewManualClock(time.Unix(0, 0))
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Valkey90, Password: "pw", Clock: clock})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client := leasetest.NewClient(srv.Addr(), "pw") // in a program: your client's adapter (rueidislease, goredis)
	locks, err := lease.New(client)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	coord, err := coordination.New(locks)
	if err != nil {
		panic(err)
	}

	// The protected resource keeps the largest token it accepted and
	// refuses a smaller one, atomically with the write.
	var mu sync.Mutex
	var lastToken int64
	stored := ""
	write := func(token int64, value string) error {
		mu.Lock()
		defer mu.Unlock()
		if token <= 0 || token < lastToken {
			return errors.New("rejected: stale fencing token")
		}
		lastToken, stored = token, value
		return nil
	}

	first, err := coord.Acquire(ctx, "{invoice:42}:lease", "{invoice:42}:fence", 30*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("first owner, token", first.FencingToken(), "write:", write(first.FencingToken(), "draft"))

	clock.Advance(31 * time.Second) // the first owner stalls; its lease expires on the server

	second, err := coord.Acquire(ctx, "{invoice:42}:lease", "{invoice:42}:fence", 30*time.Second)
	if err != nil {
		panic(err)
	}
	defer second.Close()
	fmt.Println("second owner, token", second.FencingToken(), "write:", write(second.FencingToken(), "final"))

	fmt.Println("first owner wakes up, write:", write(first.FencingToken(), "stale draft"))
	renewed, _ := first.ResetExpiry(ctx, 30*time.Second)
	fmt.Println("first owner renews:", renewed)
	outcome, _ := first.Release(ctx)
	fmt.Println("first owner releases:", outcome)
	fmt.Println("stored:", stored)
	// Output:
	// first owner, token 1 write: <nil>
	// second owner, token 2 write: <nil>
	// first owner wakes up, write: rejected: stale fencing token
	// first owner renews: false
	// first owner releases: NotOwned
	// stored: final
}

// Long work runs under the lock's Context while a keep-alive renews the
// lease in the background; the fencing token goes with every write. The
// Context ends, with the reason as its cause, when the lease ends: here
// because Close released it.
func ExampleCoordinator_Acquire() {
	ctx := context.Background()
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Redis84, Password: "pw"})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client := leasetest.NewClient(srv.Addr(), "pw") // in a program: your client's adapter (rueidislease, goredis)
	locks, err := lease.New(client)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	coord, err := coordination.New(locks)
	if err != nil {
		panic(err)
	}

	lock, err := coord.Acquire(ctx, "{report}:lease", "{report}:fence", 10*time.Second, lease.WithKeepAlive())
	if errors.Is(err, lease.ErrNotAcquired) {
		return // another owner holds it
	}
	if err != nil {
		panic(err)
	}
	work := lock.Context() // run the protected work under this context
	fmt.Println("fencing token:", lock.FencingToken())
	fmt.Println("held:", lock.State(), "work may go on:", work.Err() == nil)

	if err := lock.Close(); err != nil { // stops the keep-alive, then releases
		panic(err)
	}
	fmt.Println("after Close:", lock.State(), "cause:", context.Cause(work))
	// Output:
	// fencing token: 1
	// held: Held work may go on: true
	// after Close: Released cause: lease: released
}

// A contended try is not an error, and leaves the counter alone: the next
// owner gets the next token.
func ExampleCoordinator_TryAcquire() {
	ctx := context.Background()
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Valkey81, Password: "pw"})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client := leasetest.NewClient(srv.Addr(), "pw") // in a program: your client's adapter (rueidislease, goredis)
	locks, err := lease.New(client)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	coord, err := coordination.New(locks)
	if err != nil {
		panic(err)
	}

	holder, err := coord.Acquire(ctx, "{job}:lease", "{job}:fence", time.Minute)
	if err != nil {
		panic(err)
	}
	attempt, err := coord.TryAcquire(ctx, "{job}:lease", "{job}:fence", time.Minute)
	fmt.Println(attempt, err)
	fmt.Println("counter:", strings.TrimSpace(strings.TrimPrefix(srv.Exec("GET", "{job}:fence"), "$1\r\n")))

	if _, err := holder.Release(ctx); err != nil {
		panic(err)
	}
	attempt, err = coord.TryAcquire(ctx, "{job}:lease", "{job}:fence", time.Minute)
	if err != nil {
		panic(err)
	}
	defer attempt.Close()
	fmt.Println("acquired:", attempt.Acquired(), "token:", attempt.Lock().FencingToken())
	// Output:
	// coordination.Attempt{acquired: false} <nil>
	// counter: 1
	// acquired: true token: 2
}

// A server without replicas acknowledges nothing: the token is refused, the
// lease released, and the counter stays incremented (the token is spent).
func ExampleWithReplicas() {
	ctx := context.Background()
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Valkey90, Password: "pw"})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client := leasetest.NewClient(srv.Addr(), "pw") // in a program: your client's adapter (rueidislease, goredis)
	locks, err := lease.New(client)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	coord, err := coordination.New(locks)
	if err != nil {
		panic(err)
	}

	_, err = coord.Acquire(ctx, "{invoice:42}:lease", "{invoice:42}:fence", 30*time.Second,
		coordination.WithReplicas(1, 100*time.Millisecond))
	var nr *coordination.NotReplicatedError
	if errors.As(err, &nr) {
		fmt.Println("acknowledged:", nr.Acknowledged, "of", nr.Required, "- released:", nr.Released)
	}

	lock, err := coord.Acquire(ctx, "{invoice:42}:lease", "{invoice:42}:fence", 30*time.Second)
	if err != nil {
		panic(err)
	}
	defer lock.Close()
	fmt.Println("next token without WithReplicas:", lock.FencingToken())
	// Output:
	// acknowledged: 0 of 1 - released: true
	// next token without WithReplicas: 2
}
