package lease_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// startExampleServer starts an in-process simulated Valkey 9.0 and a client.
func startExampleServer(ctx context.Context) (*sim.Server, rueidis.Client) {
	srv, err := sim.Start(ctx, sim.Config{Profile: sim.Valkey90, Password: "pw"})
	if err != nil {
		panic(err)
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, Password: "pw"})
	if err != nil {
		panic(err)
	}
	return srv, client
}

// Share a token between processes: take the lock, extend it, check the
// owner and release it.
func ExampleLocks_TryTake() {
	ctx := context.Background()
	srv, client := startExampleServer(ctx)
	defer srv.Close()
	defer client.Close()

	locks, err := lease.New(client)
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	token, err := lease.TokenFromString("owner-42")
	if err != nil {
		panic(err)
	}
	taken, err := locks.TryTake(ctx, "locks:report", token, 30*time.Second)
	fmt.Println("taken:", taken, err)

	again, _ := locks.TryTake(ctx, "locks:report", lease.NewToken(), 30*time.Second)
	fmt.Println("taken by someone else:", again)

	extended, _ := locks.ResetExpiry(ctx, "locks:report", token, time.Minute)
	fmt.Println("extended:", extended)

	owner, found, _ := locks.OwnerToken(ctx, "locks:report")
	fmt.Println("still ours:", found && owner == token)

	released, _ := locks.Release(ctx, "locks:report", token)
	fmt.Println("released:", released)

	releasedTwice, _ := locks.Release(ctx, "locks:report", token)
	fmt.Println("released again:", releasedTwice)
	// Output:
	// taken: true <nil>
	// taken by someone else: false
	// extended: true
	// still ours: true
	// released: true
	// released again: false
}

// A key-prefixed view applies its prefix to every key it sends.
func ExampleLocks_WithKeyPrefix() {
	ctx := context.Background()
	srv, client := startExampleServer(ctx)
	defer srv.Close()
	defer client.Close()

	locks, _ := lease.New(client, lease.WithKeyPrefix("app:"))
	defer locks.Close()
	tenant := locks.WithKeyPrefix("tenant-a:")

	token := lease.NewToken()
	ok, _ := tenant.TryTake(ctx, "report", token, 30*time.Second)
	fmt.Println("taken:", ok)
	fmt.Print("server key exists: ", srv.Exec("EXISTS", "app:tenant-a:report"))
	_, _ = tenant.Release(ctx, "report", token)
	// Output:
	// taken: true
	// server key exists: :1
}

// Tokens compare by their exact bytes; Hex reveals them, fmt and slog never do.
func ExampleToken() {
	text, _ := lease.TokenFromString("owner-42")
	raw := lease.TokenFromBytes([]byte("owner-42"))
	fmt.Println(text == raw)
	fmt.Println(lease.TokenFromBytes([]byte{0x00, 0xAB}).Hex())

	_, err := lease.TokenFromString("bad\xff")
	fmt.Println(errors.Is(err, lease.ErrInvalidToken))

	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	logger.Info("lock held", "token", text)
	// Output:
	// true
	// 00AB
	// true
	// level=INFO msg="lock held" token="<redacted token>"
}

// Arguments are checked before anything is sent.
func ExampleLocks_ResetExpiry_validation() {
	ctx := context.Background()
	srv, client := startExampleServer(ctx)
	defer srv.Close()
	defer client.Close()
	locks, _ := lease.New(client)
	defer locks.Close()

	_, err := locks.ResetExpiry(ctx, "locks:report", lease.Token{}, time.Second)
	fmt.Println(errors.Is(err, lease.ErrEmptyToken))
	_, err = locks.ResetExpiry(ctx, "locks:report", lease.NewToken(), 0)
	fmt.Println(errors.Is(err, lease.ErrInvalidTTL))
	// Output:
	// true
	// true
}
