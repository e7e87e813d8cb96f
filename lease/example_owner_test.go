package lease_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// Label a lock with who holds it, and ask who holds a key: Holder tells
// the label and the lease left, never the token.
func ExampleLocks_Holder() {
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

	host, _ := os.Hostname()
	label := fmt.Sprintf("report-job host=%s pid=%d", host, os.Getpid())
	lock, err := locks.Acquire(ctx, "locks:report", 30*time.Second, lease.WithOwner(label), lease.WithKeepAlive())
	if err != nil {
		panic(err)
	}
	defer lock.Close()

	// Anywhere else (another process, lockctl status):
	holder, found, err := locks.Holder(ctx, "locks:report")
	if err != nil {
		panic(err)
	}
	fmt.Println("held:", found)
	fmt.Println("by this process:", holder.Label == label)
	fmt.Println("lease left at most 30s:", holder.Remaining > 0 && holder.Remaining <= 30*time.Second)

	_, found, _ = locks.Holder(ctx, "locks:nobody")
	fmt.Println("a free key is held:", found)
	// Output:
	// held: true
	// by this process: true
	// lease left at most 30s: true
	// a free key is held: false
}
