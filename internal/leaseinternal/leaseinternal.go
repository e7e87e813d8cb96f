// Package leaseinternal reaches the parts of package lease that respire-go's
// own packages build on — coordination, election, the client adapters, the
// behaviour suite, the simulator — and that are not lease's API: the driver
// of a Locks, the fencing-token acquisition, Locks over any transport. Only
// this module (and the adapter modules under it) can import it; its API
// changes with the implementation.
package leaseinternal

import (
	"context"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leaseinternal/hook"
	"github.com/respire-go/respire/lease"
)

// Driver returns the driver that runs locks' managed locks.
func Driver(locks *lease.Locks) *actor.Driver {
	return hook.Driver.(func(*lease.Locks) *actor.Driver)(locks)
}

// AcquireFenced is TryAcquire (op "TryAcquire") or Acquire (op "Acquire",
// where a lock held by another owner is an error matching
// lease.ErrNotAcquired) on locks with f's fencing script as every try's
// command instead of SET NX PX: the acquisition package coordination builds
// fencing-token locks with (f records the fencing token the script handed
// out, and what WithReplicas' WAIT answered). The same options, handle,
// keep-alive and telemetry as any acquisition; lease.WithReplicas applies
// only here.
func AcquireFenced(locks *lease.Locks, ctx context.Context, op, key string, ttl time.Duration, f *actor.Fenced,
	opts ...lease.AcquireOption) (*lease.Lock, error) {
	return hook.AcquireFenced.(func(*lease.Locks, context.Context, string, string, time.Duration, *actor.Fenced,
		...lease.AcquireOption) (*lease.Lock, error))(locks, ctx, op, key, ttl, f, opts...)
}

// NewTransport returns Locks on any transport: what lease.New does over a
// client's engine (the simulator's, a test's). Locks takes ownership of t:
// Locks.Close closes it. It fails with lease.ErrNilClient for a nil t and
// lease.ErrInvalidOption for a bad option, before anything is sent.
func NewTransport(t conn.Transport, opts ...lease.Option) (*lease.Locks, error) {
	return hook.NewTransport.(func(conn.Transport, ...lease.Option) (*lease.Locks, error))(t, opts...)
}
