package coordination

import (
	"context"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
)

// TestOwnerLabel_FencingTokenLocks: a fencing-token lock acquired
// lease.WithOwner stores the label after its token, through the fencing
// script; Locks.Holder reads it, and the lock's renewals, VerifyStillHeld
// and release, which compare the whole value, work as without a label.
func TestOwnerLabel_FencingTokenLocks(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		ctx := ctxT(t)
		all, err := lease.New(s.locksClient(t))
		if err != nil {
			t.Fatal(err)
		}
		defer all.Close()
		locks := all.WithKeyPrefix(s.prefix)
		c, err := New(locks)
		if err != nil {
			t.Fatal(err)
		}
		const label = "billing-3 pid=99"
		lock, err := c.Acquire(ctx, leaseKey, counterKey, time.Minute, lease.WithOwner(label), lease.WithKeepAlive())
		if err != nil || lock.FencingToken() != 1 {
			t.Fatalf("Acquire = %v, %v; want token 1", lock, err)
		}
		if lock.OwnerLabel() != label {
			t.Fatalf("OwnerLabel = %q; want %q", lock.OwnerLabel(), label)
		}
		h, found, err := locks.Holder(ctx, leaseKey)
		if err != nil || !found || h.Label != label || h.Remaining <= 0 {
			t.Fatalf("Holder = %+v, %v, %v; want label %q and a lease", h, found, err, label)
		}
		if ok, err := lock.ResetExpiry(ctx, time.Minute); !ok || err != nil {
			t.Fatalf("ResetExpiry = %v, %v", ok, err)
		}
		if held, err := lock.VerifyStillHeld(ctx); !held || err != nil {
			t.Fatalf("VerifyStillHeld = %v, %v", held, err)
		}
		if lock.Context().Err() != nil {
			t.Fatalf("the lock ended: %v", context.Cause(lock.Context()))
		}
		if out, err := lock.Release(ctx); out != lease.Released || err != nil {
			t.Fatalf("Release = %v, %v; want Released", out, err)
		}
	})
}
