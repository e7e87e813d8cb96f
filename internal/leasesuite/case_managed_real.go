package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/lease"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
)

// The managed lifecycle against the real redis-server 7.0 of the
// environment: Lua renewal by the keep-alive, a manual reset, verification,
// and Close stopping the keep-alive before the Lua release.
func caseManagedLifecycleOnRealRedis70(t *testing.T, tr Transport) {
	addr, password := realRedis70(t)
	realserver.Lock(t, addr)
	locks := newLocks(t, tr, clientOf([]string{addr}, "", password, false)).WithKeyPrefix("respire-test:managed:")
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	ctx := ctxT(t)
	key := "lifecycle-" + lease.NewToken().Hex()[:8]
	lock, err := locks.Acquire(ctx, key, 10*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	clock.Advance(5 * time.Second)
	eventually(t, "keep-alive renewal confirmed", func() bool { return renewedFresh(lock) })
	if ok, err := lock.ResetExpiry(ctx, 20*time.Second); !ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v", ok, err)
	}
	if held, err := lock.VerifyStillHeld(ctx); !held || err != nil {
		t.Fatalf("VerifyStillHeld = %v, %v", held, err)
	}
	if _, err := locks.Acquire(ctx, key, time.Second); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("contender = %v; want ErrNotAcquired", err)
	}
	if err := lock.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if cause := ownedKeepAliveErr(lock); !errors.Is(cause, lease.ErrKeepAliveStopped) {
		t.Fatalf("keep-alive cause %v", cause)
	}
	if cause := context.Cause(lock.Context()); !errors.Is(cause, lease.ErrReleased) {
		t.Fatalf("lock's context cause %v; want ErrReleased", cause)
	}
	if _, found, err := locks.OwnerToken(ctx, key); found || err != nil {
		t.Fatalf("after Close the key is still there (%v, %v)", found, err)
	}
}

func init() {
	register(
		Case{"ManagedLifecycleOnRealRedis70", caseManagedLifecycleOnRealRedis70},
	)
}
