// Package hook holds what package lease hands to internal/leaseinternal:
// the parts of a *lease.Locks that respire-go's own packages need and that
// are not lease's API. lease sets the variables in its init; only
// internal/leaseinternal reads them (typed: lease imports this package, so
// it cannot name lease's types).
package hook

// Each variable holds a func whose signature internal/leaseinternal asserts
// (see there); nil until package lease is initialised.
var (
	// Driver is func(*lease.Locks) *actor.Driver.
	Driver any
	// AcquireFenced is func(*lease.Locks, context.Context, string, string,
	// time.Duration, *actor.Fenced, ...lease.AcquireOption) (*lease.Lock, error).
	AcquireFenced any
	// NewTransport is func(conn.Transport, ...lease.Option) (*lease.Locks, error).
	NewTransport any
)
