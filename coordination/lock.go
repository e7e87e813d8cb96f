package coordination

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/respire-go/respire/lease"
)

// Lock is a held fencing-token lock: a managed lease handle, the embedded
// *lease.Lock, plus the fencing token its acquisition received. Pass
// FencingToken to the protected resource with every write; the resource
// must reject tokens smaller than the largest it accepted (see the package
// documentation).
//
// Everything else is the lease handle's (see lease.Lock): Context (ended,
// with the cause, when the lease ends for any reason), KeepAlive,
// ResetExpiry, Release (concurrent calls share one delete), Close and
// CloseContext, VerifyStillHeld, State, Duration, RemainingEstimate,
// ExpiresAtEstimate, Key and Token (the owner token, a secret), and Guard
// and GuardWith, whose scripts also check this lock's fencing token against
// the fence record (see the package documentation). Renewals
// keep the fencing token; uncertain renewals and releases are fenced with
// CLIENT KILL like any managed lock's. Pass lock.Lock wherever a
// *lease.Lock is expected (a job runner, a leader election).
//
// A Lock is returned only when acquired; it is never the zero value. fmt
// and slog show its keys, fencing token, state and remaining estimate,
// never its owner token. Release or Close it when done.
type Lock struct {
	*lease.Lock
	fencingToken int64
	counterKey   string
}

// FencingToken returns the token this acquisition received: a positive
// int64, larger than every token handed out earlier from the same counter
// history. It stays the same across renewals. It does not block.
func (l *Lock) FencingToken() int64 { return l.fencingToken }

// CounterKey returns the fencing counter key as given to the acquisition
// (without the Locks' key prefix). It does not block.
func (l *Lock) CounterKey() string { return l.counterKey }

// Format prints the lock's keys, fencing token, state and remaining
// estimate for every verb, never its owner token.
func (l *Lock) Format(f fmt.State, verb rune) {
	if l == nil || l.Lock == nil {
		fmt.Fprint(f, "<nil>")
		return
	}
	fmt.Fprintf(f, "coordination.Lock{key: %q, counterKey: %q, fencingToken: %d, state: %s, remaining: %v}",
		l.Key(), l.counterKey, l.fencingToken, l.State(), l.RemainingEstimate().Round(time.Millisecond))
}

// LogValue logs the lock's keys, fencing token, state and remaining
// estimate, never its owner token.
func (l *Lock) LogValue() slog.Value {
	if l == nil || l.Lock == nil {
		return slog.StringValue("<nil>")
	}
	return slog.GroupValue(slog.String("key", l.Key()), slog.String("counterKey", l.counterKey),
		slog.Int64("fencingToken", l.fencingToken), slog.String("state", l.State().String()),
		slog.String("remaining", l.RemainingEstimate().Round(time.Millisecond).String()))
}

// Attempt is the result of TryAcquire: a held Lock, or nothing when another
// owner holds the lease. The zero value is an attempt that did not acquire.
// It is a small value; copies share the lock.
type Attempt struct {
	lock *Lock
}

// Acquired reports whether the lock was acquired. It does not block.
func (a Attempt) Acquired() bool { return a.lock != nil }

// Lock returns the acquired lock, or nil when not acquired.
func (a Attempt) Lock() *Lock { return a.lock }

// Close closes the lock if it was acquired (see lease.Lock.Close) and does
// nothing otherwise.
func (a Attempt) Close() error {
	if a.lock == nil {
		return nil
	}
	return a.lock.Close()
}

// Format prints whether the attempt acquired, and its lock, for every verb.
func (a Attempt) Format(f fmt.State, verb rune) {
	if a.lock == nil {
		fmt.Fprint(f, "coordination.Attempt{acquired: false}")
		return
	}
	fmt.Fprintf(f, "coordination.Attempt{acquired: true, lock: %v}", a.lock)
}

// LogValue logs whether the attempt acquired, and its lock.
func (a Attempt) LogValue() slog.Value {
	if a.lock == nil {
		return slog.GroupValue(slog.Bool("acquired", false))
	}
	return slog.GroupValue(slog.Bool("acquired", true), slog.Any("lock", a.lock))
}
