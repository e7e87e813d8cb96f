package lease_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// Create Locks on a client. A program takes it from its Redis client's
// adapter, which calls New: rueidislease.New(client, opts...) for rueidis,
// goredis.New for go-redis. New sends nothing; sessions open on first use.
// Close the Locks before the client.
func ExampleNew() {
	ctx := context.Background()

	// An in-process server for the example; use your Redis address.
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Valkey90})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	client := leasetest.NewClient(srv.Addr(), "") // in a program: your client's adapter (rueidislease, goredis)

	root, err := lease.New(client,
		lease.WithLogger(slog.Default()),        // diagnostics; tokens are never logged
		lease.WithCommandTimeout(2*time.Second)) // bounds each lock command
	if err != nil {
		panic(err) // ErrNilClient or ErrInvalidOption
	}
	defer root.Close()
	locks := root.WithKeyPrefix("myapp:") // every key sent gets this prefix

	lock, err := locks.Acquire(ctx, "report", 30*time.Second)
	if err != nil {
		panic(err)
	}
	defer lock.Close()
	fmt.Println("held:", lock.Key(), lock.State())
	// Output:
	// held: report Held
}

// A key-prefixed view applies its prefix to every key it sends.
func ExampleLocks_WithKeyPrefix() {
	ctx := context.Background()

	// An in-process server for the example; use your Redis address.
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Valkey90})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	client := leasetest.NewClient(srv.Addr(), "") // in a program: your client's adapter (rueidislease, goredis)
	root, err := lease.New(client)
	if err != nil {
		panic(err)
	}
	defer root.Close()

	locks := root.WithKeyPrefix("app:")
	tenant := locks.WithKeyPrefix("tenant-a:") // shares the parent's sessions
	token := lease.NewToken()
	ok, err := tenant.TryTake(ctx, "report", token, 30*time.Second)
	fmt.Println("taken:", ok, err)
	fmt.Println("prefix:", tenant.KeyPrefix())
	fmt.Print("server key exists: ", srv.Exec("EXISTS", "app:tenant-a:report"))
	_, _ = tenant.Release(ctx, "report", token)
	// Output:
	// taken: true <nil>
	// prefix: app:tenant-a:
	// server key exists: :1
}

// The raw-token API: you choose the token, and every call names the key and
// the token. Take the lock, extend it, check the owner and release it. It
// never needs CLIENT permissions and keeps no state in the process.
func ExampleLocks_TryTake() {
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

	token := lease.NewToken() // fresh and secret, one per acquisition
	taken, err := locks.TryTake(ctx, "locks:report", token, 30*time.Second)
	fmt.Println("taken:", taken, err)

	again, _ := locks.TryTake(ctx, "locks:report", lease.NewToken(), 30*time.Second)
	fmt.Println("taken by another token:", again)

	extended, _ := locks.ResetExpiry(ctx, "locks:report", token, time.Minute)
	fmt.Println("extended:", extended)

	owner, found, _ := locks.OwnerToken(ctx, "locks:report")
	fmt.Println("still ours:", found && owner == token)

	released, _ := locks.Release(ctx, "locks:report", token)
	fmt.Println("released:", released)

	releasedTwice, _ := locks.Release(ctx, "locks:report", token)
	fmt.Println("released again:", releasedTwice) // nothing changed: it was not ours any more
	// Output:
	// taken: true <nil>
	// taken by another token: false
	// extended: true
	// still ours: true
	// released: true
	// released again: false
}

// A token shared between processes: one process takes the lock and hands
// the token's bytes over (a queue message, a database row: somewhere
// secrets may go); another rebuilds the token and releases the lock.
func ExampleLocks_Release() {
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

	// Process A: take the lock for the whole batch and pass the token on.
	token := lease.NewToken()
	if ok, err := locks.TryTake(ctx, "locks:batch-7", token, time.Minute); !ok || err != nil {
		panic("batch 7 is taken")
	}
	handedOver := token.Bytes()

	// Process B: finish the batch, then release with the same token.
	theirs := lease.TokenFromBytes(handedOver)
	released, err := locks.Release(ctx, "locks:batch-7", theirs)
	fmt.Println("released by B:", released, err)

	// A wrong token changes nothing.
	_, _ = locks.TryTake(ctx, "locks:batch-8", lease.NewToken(), time.Minute)
	released, _ = locks.Release(ctx, "locks:batch-8", theirs)
	fmt.Println("released with another lock's token:", released)
	// Output:
	// released by B: true <nil>
	// released with another lock's token: false
}

// Tokens compare by their exact bytes; Hex reveals them, fmt and slog never do.
func ExampleToken() {
	text, _ := lease.TokenFromString("owner-42")
	raw := lease.TokenFromBytes([]byte("owner-42"))
	fmt.Println(text == raw)
	fmt.Println(text) // redacted
	fmt.Println(lease.TokenFromBytes([]byte{0x00, 0xAB}).Hex())

	_, err := lease.TokenFromString("bad\xff")
	fmt.Println(errors.Is(err, lease.ErrInvalidToken))

	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // no time, for a stable output
			}
			return a
		},
	}))
	logger.Info("lock held", "token", text)
	// Output:
	// true
	// <redacted token>
	// 00AB
	// true
	// level=INFO msg="lock held" token="<redacted token>"
}

// Arguments are checked before anything is sent; the errors match the
// package's sentinels with errors.Is.
func ExampleLocks_ResetExpiry_validation() {
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

	_, err = locks.ResetExpiry(ctx, "locks:report", lease.Token{}, time.Second)
	fmt.Println(errors.Is(err, lease.ErrEmptyToken))
	_, err = locks.ResetExpiry(ctx, "locks:report", lease.NewToken(), 0)
	fmt.Println(errors.Is(err, lease.ErrInvalidTTL))
	_, err = locks.ResetExpiry(ctx, "", lease.NewToken(), time.Second)
	fmt.Println(errors.Is(err, lease.ErrEmptyKey))
	// Output:
	// true
	// true
	// true
}
