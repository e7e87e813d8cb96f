package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// The context-of-the-lease pattern: acquire with a keep-alive, close in a
// defer, run the protected work under lock.Context(), and when the work
// stops early read why with context.Cause.
func Example() {
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

	lock, err := locks.Acquire(ctx, "locks:report", 30*time.Second, lease.WithKeepAlive())
	if errors.Is(err, lease.ErrNotAcquired) {
		fmt.Println("another owner is running the report")
		return
	}
	if err != nil {
		panic(err)
	}
	defer lock.Close() // stops the keep-alive, then releases

	// The protected work: it stops as soon as its context ends.
	runReport := func(ctx context.Context) error {
		for part := 1; part <= 3; part++ {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(10 * time.Millisecond): // one part of the report
			}
		}
		return nil
	}

	// lock.Context() ends, with the reason as its cause, when the lease ends:
	// released, run out, or lost (matching lease.ErrOwnershipLost).
	if err := runReport(lock.Context()); err != nil {
		fmt.Println("report stopped:", err)
		return
	}
	fmt.Println("report done")
	// Output:
	// report done
}

// Try to take a lock once; the attempt releases it when closed.
func ExampleLocks_TryAcquire() {
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

	attempt, err := locks.TryAcquire(ctx, "locks:report", 30*time.Second)
	if err != nil {
		panic(err)
	}
	defer attempt.Close() // releases only if acquired
	fmt.Println("acquired:", attempt.Acquired(), attempt.Lock().Duration())

	second, err := locks.TryAcquire(ctx, "locks:report", 30*time.Second)
	fmt.Println("second attempt acquired:", second.Acquired(), second.Lock() == nil, err)
	// Output:
	// acquired: true 30s
	// second attempt acquired: false true <nil>
}

// Acquire returns the lock or an error matching ErrNotAcquired. WithWait
// keeps trying, every WithRetryEvery on average, while another owner holds
// the lock.
func ExampleLocks_Acquire() {
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

	holder, err := locks.Acquire(ctx, "locks:report", 30*time.Second)
	if err != nil {
		panic(err)
	}

	// Without a wait, one try.
	_, err = locks.Acquire(ctx, "locks:report", 30*time.Second)
	fmt.Println(errors.Is(err, lease.ErrNotAcquired), err)

	// With a wait: the holder (another process; here a timer) releases
	// after 100ms, well within the wait.
	time.AfterFunc(100*time.Millisecond, func() { _, _ = holder.Release(ctx) })
	lock, err := locks.Acquire(ctx, "locks:report", 30*time.Second,
		lease.WithWait(5*time.Second), lease.WithRetryEvery(20*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer lock.Close()
	fmt.Println("acquired after waiting:", lock.State())
	// Output:
	// true lease: Acquire "locks:report": not acquired: another owner holds the lock
	// acquired after waiting: Held
}

// WithWaitUntilDone waits as long as the call's ctx lasts, as
// semaphore.Acquire does; when ctx ends first, the error is ctx's cause.
func ExampleLocks_Acquire_waitUntilDone() {
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

	holder, err := locks.Acquire(ctx, "locks:report", 30*time.Second)
	if err != nil {
		panic(err)
	}

	// The holder keeps the lock longer than this caller is willing to wait.
	impatient, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = locks.Acquire(impatient, "locks:report", 30*time.Second, lease.WithWaitUntilDone())
	cancel()
	fmt.Println("gave up:", errors.Is(err, context.DeadlineExceeded))

	// The holder (another process; here a timer) releases while this
	// caller waits.
	time.AfterFunc(100*time.Millisecond, func() { _, _ = holder.Release(ctx) })
	patient, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lock, err := locks.Acquire(patient, "locks:report", 30*time.Second,
		lease.WithWaitUntilDone(), lease.WithKeepAlive())
	if err != nil {
		panic(err)
	}
	defer lock.Close()
	fmt.Println("acquired:", lock.State())
	// Output:
	// gave up: true
	// acquired: Held
}

// The lock's context ends when the lease ends, for any reason; its cause
// says which. Here no keep-alive renews a short lease, so it runs out in
// the middle of the work, a drift margin before it can have expired on the
// server.
func ExampleLock_Context() {
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

	lock, err := locks.Acquire(ctx, "locks:report", 500*time.Millisecond) // no keep-alive
	if err != nil {
		panic(err)
	}
	defer lock.Close()

	work := lock.Context()
	select {
	case <-time.After(10 * time.Second): // the work, longer than the lease
		fmt.Println("work finished")
	case <-work.Done():
		fmt.Println("work stopped")
	}

	switch cause := context.Cause(work); {
	case errors.Is(cause, lease.ErrReleased):
		fmt.Println("released by this handle")
	case errors.Is(cause, lease.ErrExpired):
		fmt.Println("the lease ran out: renew it (WithKeepAlive) for longer work")
	case errors.Is(cause, lease.ErrOwnershipLost):
		fmt.Println("lost:", cause) // a *LossError or *RenewalFailureError
	}
	fmt.Println(lock.State())
	// Output:
	// work stopped
	// the lease ran out: renew it (WithKeepAlive) for longer work
	// Lost
}

// Use Release when its outcome matters: NotOwned says the lock had been
// lost before the release, so the work may have overlapped another owner.
// A second release sends nothing.
func ExampleLock_Release() {
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

	lock, err := locks.Acquire(ctx, "locks:report", 30*time.Second)
	if err != nil {
		panic(err)
	}
	held, _ := lock.VerifyStillHeld(ctx)
	fmt.Println("held:", held)
	outcome, err := lock.Release(ctx)
	fmt.Println(outcome, err)
	outcome, err = lock.Release(ctx)
	fmt.Println(outcome, err)

	lock, err = locks.Acquire(ctx, "locks:report", 30*time.Second)
	if err != nil {
		panic(err)
	}
	// Simulate a loss: another owner's token replaces ours on the server.
	srv.Exec("SET", "locks:report", "another-owner")

	switch outcome, err := lock.Release(ctx); {
	case err != nil:
		fmt.Println("the release failed; the lock ends at its lease's end:", err)
	case outcome == lease.NotOwned:
		fmt.Println("NotOwned: do not trust what was written under this lock")
	}
	// Output:
	// held: true
	// Released <nil>
	// AlreadyReleased <nil>
	// NotOwned: do not trust what was written under this lock
}

// Use Close in a defer, where the work is over either way: it stops the
// keep-alive, then releases, swallows what expiry makes harmless, and is
// idempotent.
func ExampleLock_Close() {
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

	lock, err := locks.Acquire(ctx, "locks:report", 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		panic(err)
	}
	defer lock.Close() // a second Close does nothing

	fmt.Println("close:", lock.Close())
	fmt.Println("state:", lock.State())
	fmt.Println("cause:", context.Cause(lock.Context()))
	// Output:
	// close: <nil>
	// state: Released
	// cause: lease: released
}

// Keep a lock alive only for part of its life; stopping the keep-alive does
// not release the lock.
func ExampleLock_KeepAlive() {
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

	lock, err := locks.Acquire(ctx, "locks:report", 30*time.Second)
	if err != nil {
		panic(err)
	}
	defer lock.Close()
	keepAlive, err := lock.KeepAlive(ctx)
	if err != nil {
		panic(err) // e.g. a *lease.PermissionError when CLIENT KILL is not allowed
	}
	_, err = lock.KeepAlive(ctx)
	fmt.Println("second keep-alive:", errors.Is(err, lease.ErrKeepAliveActive))

	keepAlive.Stop()
	fmt.Println("stopped:", keepAlive.Err(), "lost:", keepAlive.OwnershipLost())
	fmt.Println("still held:", lock.State())
	// Output:
	// second keep-alive: true
	// stopped: lease: keep-alive stopped lost: false
	// still held: Held
}

// Renew a lock by hand, for example once per batch of work. false means
// the lock is no longer ours: stop, and do not retry the protected writes.
func ExampleLock_ResetExpiry() {
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

	lock, err := locks.Acquire(ctx, "locks:report", 30*time.Second)
	if err != nil {
		panic(err)
	}
	defer lock.Close()

	renewed, err := lock.ResetExpiry(ctx, time.Minute)
	fmt.Println("renewed:", renewed, err, lock.Duration())

	// Simulate a loss: the key disappears on the server (an eviction, a
	// restart without persistence).
	srv.Exec("DEL", "locks:report")

	renewed, err = lock.ResetExpiry(ctx, time.Minute)
	fmt.Println("renewed:", renewed, err)
	fmt.Println("cause:", context.Cause(lock.Context()))
	// Output:
	// renewed: true <nil> 1m0s
	// renewed: false <nil>
	// cause: lease: ownership lost: the key expired, or another owner took or deleted it
}

// A loss is a *LossError (matching ErrOwnershipLost) whose Reason says how
// ownership was lost. Here another owner overwrites the key; the holder,
// told by the server's invalidation push, reads its key at once and finds
// the other owner, and the work running under the lock's context stops.
func ExampleLossError() {
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

	// A short lease: the keep-alive renews it about every 500ms.
	lock, err := locks.Acquire(ctx, "locks:report", time.Second, lease.WithKeepAlive())
	if err != nil {
		panic(err)
	}
	defer lock.Close()

	// Simulate a loss: another owner's token replaces ours on the server.
	// The server's invalidation push makes the holder read its key at
	// once; without push (WithoutPush) the next renewal would be refused
	// (reason: refused).
	srv.Exec("SET", "locks:report", "another-owner")

	work := lock.Context()
	<-work.Done() // the work would stop here

	var loss *lease.LossError
	if errors.As(context.Cause(work), &loss) {
		fmt.Println("ownership lost:", errors.Is(loss, lease.ErrOwnershipLost))
		fmt.Println("reason:", loss.Reason)
	}
	// Output:
	// ownership lost: true
	// reason: read-refused
}

// A release whose reply never comes may have run: the error matches
// ErrOutcomeUnknown. The handle counts the lock as lost and fences the
// connection that carried the delete (CLIENT KILL), so the delete cannot
// run later; the lock ends at the latest when its lease runs out.
func ExampleLock_Release_outcomeUnknown() {
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

	lock, err := locks.Acquire(ctx, "locks:report", 30*time.Second)
	if err != nil {
		panic(err)
	}

	// Simulate a lost reply: the server runs the delete, then the
	// connection drops before the reply is written.
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Command: "DELIFEQ"})

	_, err = lock.Release(ctx)
	fmt.Println("outcome unknown:", errors.Is(err, lease.ErrOutcomeUnknown))
	fmt.Println("state:", lock.State())

	var loss *lease.LossError
	if errors.As(context.Cause(lock.Context()), &loss) {
		fmt.Println("reason:", loss.Reason)
	}
	outcome, err := lock.Release(ctx) // nothing is sent again
	fmt.Println(outcome, err)
	// Output:
	// outcome unknown: true
	// state: Lost
	// reason: release-outcome-unknown
	// NotOwned <nil>
}
