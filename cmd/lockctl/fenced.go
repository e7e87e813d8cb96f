package main

import (
	"context"

	"github.com/respire-go/respire/coordination"
	"github.com/respire-go/respire/lease"
)

// acquireFenced takes a fencing-token lock (package coordination): the
// lease on r.key and the next token of r.counter in one atomic step, with
// a keep-alive.
func acquireFenced(ctx context.Context, locks *lease.Locks, r acquireRequest) (heldLock, error) {
	c, err := coordination.New(locks)
	if err != nil {
		return nil, err
	}
	lock, err := c.Acquire(ctx, r.key, r.counter, r.ttl, r.acquireOptions()...)
	if err != nil {
		return nil, err
	}
	return lock, nil
}
