package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respire-go/respire/lease"
)

// Try to take a lock once; the attempt releases it when closed.
func ExampleLocks_TryAcquire() {
	ctx := context.Background()
	srv, client := startExampleServer(ctx)
	defer srv.Close()
	defer client.Close()
	locks, _ := lease.New(client)
	defer locks.Close()

	attempt, err := locks.TryAcquire(ctx, "locks:report", 30*time.Second)
	if err != nil {
		panic(err)
	}
	defer attempt.Close() // releases only if acquired
	fmt.Println("acquired:", attempt.Acquired(), attempt.Lock().Duration())

	second, _ := locks.TryAcquire(ctx, "locks:report", 30*time.Second)
	fmt.Println("second attempt acquired:", second.Acquired(), second.Lock() == nil)
	// Output:
	// acquired: true 30s
	// second attempt acquired: false true
}

// Acquire with an owned keep-alive and run the protected work under its
// context, which is cancelled (with a cause) if ownership is ever in doubt.
func ExampleLocks_Acquire() {
	ctx := context.Background()
	srv, client := startExampleServer(ctx)
	defer srv.Close()
	defer client.Close()
	locks, _ := lease.New(client)
	defer locks.Close()

	lock, err := locks.Acquire(ctx, "locks:report", 30*time.Second,
		lease.WithKeepAlive(), lease.WithWait(5*time.Second), lease.WithRetryEvery(250*time.Millisecond))
	if errors.Is(err, lease.ErrNotAcquired) {
		return // another owner held it for the whole wait
	}
	if err != nil {
		panic(err)
	}
	work := lock.Context()
	fmt.Println("working while held:", work.Err() == nil)

	_, err = locks.Acquire(ctx, "locks:report", 30*time.Second)
	fmt.Println("contender:", err)

	if err := lock.Close(); err != nil { // stops the keep-alive, then releases
		panic(err)
	}
	fmt.Println("work ended:", context.Cause(work))
	// Output:
	// working while held: true
	// contender: lease: Acquire "locks:report": not acquired: another owner holds the lock
	// work ended: lease: released
}

// Release when its outcome matters; a second release sends nothing.
func ExampleLock_Release() {
	ctx := context.Background()
	srv, client := startExampleServer(ctx)
	defer srv.Close()
	defer client.Close()
	locks, _ := lease.New(client)
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
	// Output:
	// held: true
	// Released <nil>
	// AlreadyReleased <nil>
}

// Keep a lock alive only for part of its life; stopping the keep-alive does
// not release the lock.
func ExampleLock_KeepAlive() {
	ctx := context.Background()
	srv, client := startExampleServer(ctx)
	defer srv.Close()
	defer client.Close()
	locks, _ := lease.New(client)
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
