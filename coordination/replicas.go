package coordination

import (
	"errors"
	"fmt"
	"time"

	"github.com/respire-go/respire/lease"
)

// ErrNotReplicated matches (errors.Is) a *NotReplicatedError: the script
// took the lease and incremented the counter, but WithReplicas' WAIT did not
// confirm that enough replicas acknowledged the increment, so the token was
// not handed out and the lease was released.
var ErrNotReplicated = errors.New("coordination: fencing counter increment not acknowledged by enough replicas")

// NotReplicatedError is the error of an acquisition with WithReplicas whose
// WAIT reported fewer acknowledging replicas than required, or failed. The
// lease was released with a compare-and-delete of its owner token before
// the error was returned (see Released). The counter stays incremented: the
// token is spent, never handed out, and must not be used. It matches
// ErrNotReplicated and, through Err, the cause of a failed WAIT.
type NotReplicatedError struct {
	Key string // the lease key as given (without the Locks' key prefix)
	// Required is the n of WithReplicas; Timeout its WAIT timeout (rounded
	// up to whole milliseconds).
	Required int
	Timeout  time.Duration
	// Acknowledged is WAIT's count (below Required), or -1 when WAIT gave
	// no count (Err is then set).
	Acknowledged int
	// Released reports whether the compare-and-delete deleted the lease.
	// When false (the delete failed, or found the lease already gone) a
	// lease still on the server expires with its TTL.
	Released bool
	// Err is why WAIT gave no count: a *conn.Error (a server error reply, a
	// malformed reply, or an uncertain outcome after the script's reply
	// arrived). Nil when WAIT answered with a count.
	Err error
}

// Error describes the failure without token bytes.
func (e *NotReplicatedError) Error() string {
	release := "lease released"
	if !e.Released {
		release = "lease not confirmed released (it expires with its TTL)"
	}
	if e.Err != nil {
		return fmt.Sprintf("%v: %s: WAIT %d %v failed: %v; %s; the counter stays incremented",
			ErrNotReplicated, e.Key, e.Required, e.Timeout, e.Err, release)
	}
	return fmt.Sprintf("%v: %s: %d of %d replicas acknowledged within %v; %s; the counter stays incremented",
		ErrNotReplicated, e.Key, e.Acknowledged, e.Required, e.Timeout, release)
}

// Is matches ErrNotReplicated.
func (e *NotReplicatedError) Is(target error) bool { return target == ErrNotReplicated }

// Unwrap returns the cause of a failed WAIT, or nil.
func (e *NotReplicatedError) Unwrap() error { return e.Err }

// WithReplicas makes an acquisition hand out its token only once WAIT n
// timeout, sent on the connection that ran the acquisition script (a
// dedicated connection, pipelined with the script), reports that at least n
// replicas acknowledged the write. Otherwise, or when WAIT fails, the lease
// is released with a compare-and-delete of its owner token and the
// acquisition fails with a *NotReplicatedError (ErrNotReplicated); the
// counter stays incremented. With WithWait, such a failure ends the wait.
//
// It narrows the window in which a failover to a lagging replica rolls the
// counter back; it does not close it (see docs/fencing.md): a replica that
// was not among the n can still be promoted, and WAIT says nothing about
// disk. The acquisition blocks for up to timeout more (also when contended,
// while replicas are missing or behind), so keep timeout well below the
// lease duration and give ctx longer than timeout: a ctx that ends during
// WAIT makes the outcome uncertain (conn.ErrOutcomeUnknown; the script is
// never replayed and the lease is released in the background). In cluster
// mode the dedicated connection does not follow redirects: a slot that
// moved since rueidis last read the slot map fails with a server error
// matching conn.ErrDidNotRun (nothing ran; trying again is safe).
//
// timeout is rounded up to whole milliseconds. n < 1 or timeout <= 0 is
// rejected (lease.ErrInvalidOption) before anything is sent (WAIT with a 0
// timeout would block forever). WAITAOF is not offered: see docs/fencing.md.
func WithReplicas(n int, timeout time.Duration) AcquireOption {
	return func(o *acquireOptions) error {
		if n < 1 || timeout <= 0 {
			return fmt.Errorf("coordination: WithReplicas(%d, %v): need n >= 1 and timeout > 0: %w",
				n, timeout, lease.ErrInvalidOption)
		}
		o.replicas, o.replicaTimeout = n, roundUpMillis(timeout)
		return nil
	}
}
