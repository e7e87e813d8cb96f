package goredis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
)

// TestKitLocksOnEveryClient_GoRedisHolderSeesTheFaults: a go-redis user's
// Locks over a leasetest server — goredis.New on a redis.Client connected
// with the server's Addr and Password — observes the kit's faults as
// Server.Locks does: Steal, Delete and Expire end a keep-alive holder's
// Lock.Context at once (push), with LossReadRefused, long before the first
// renewal (half of a 30 s lease).
func TestKitLocksOnEveryClient_GoRedisHolderSeesTheFaults(t *testing.T) {
	srv := leasetest.Start(t)
	client := goredisClient(t, srv.Addr(), srv.Password())
	locks, err := New(client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(locks.Close)
	for _, fault := range []struct {
		name  string
		apply func(key string) bool
	}{{"Steal", srv.Steal}, {"Delete", srv.Delete}, {"Expire", srv.Expire}} {
		t.Run(fault.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			lock, err := locks.Acquire(ctx, "report:"+fault.name, 30*time.Second, lease.WithKeepAlive())
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Close()
			if !fault.apply(lock.Key()) {
				t.Fatalf("%s(%q) = false, want true", fault.name, lock.Key())
			}
			select {
			case <-lock.Context().Done():
			case <-ctx.Done():
				t.Fatalf("%s: the holder's context still open after 20 s", fault.name)
			}
			var loss *lease.LossError
			if cause := context.Cause(lock.Context()); !errors.As(cause, &loss) || loss.Reason != lease.LossReadRefused {
				t.Fatalf("cause %v, want a LossError with LossReadRefused", cause)
			}
		})
	}
}
