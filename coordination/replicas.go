package coordination

import (
	"errors"
	"fmt"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/lease"
)

// ErrNotReplicated matches (errors.Is) a *NotReplicatedError: the script
// took the lease and incremented the counter, but WithReplicas' WAIT did not
// confirm that enough replicas acknowledged the increment, so the token was
// not handed out and the lease was released.
var ErrNotReplicated = errors.New("coordination: fencing counter increment not acknowledged by enough replicas")

// NotReplicatedError is the error of an acquisition with WithReplicas whose
// WAIT reported fewer acknowledging replicas than required, or failed. No
// lock is handed out, and the handle the acquisition made was ended before
// the error was returned: its keep-alive (lease.WithKeepAlive) stopped
// first, then the lease released (a compare-and-delete of its owner token,
// see Released). Whatever that release's outcome — a min-replicas-to-write
// primary refuses it with NOREPLICAS while its replicas lag — nothing
// renews the lease afterwards: one not deleted expires with its TTL. The counter
// stays incremented: the token is spent, never handed out, and must not be
// used. It matches ErrNotReplicated and, through Err, the classification of
// a failed WAIT (lease.ErrServerReply, lease.ErrOutcomeUnknown, ...).
type NotReplicatedError struct {
	Key string // the lease key as given (without the Locks' key prefix)
	// Required is the n of WithReplicas; Timeout its WAIT timeout (rounded
	// up to whole milliseconds).
	Required int
	Timeout  time.Duration
	// Acknowledged is WAIT's count (below Required), or -1 when WAIT gave
	// no count (Err is then set).
	Acknowledged int
	// Released reports whether the release deleted the lease. When false
	// (the delete failed, or found the lease already gone) a lease still on
	// the server expires with its TTL.
	Released bool
	// Err is why WAIT gave no count: a server error reply, a malformed
	// reply, or an outcome lost after the script's reply arrived. Nil when
	// WAIT answered with a count.
	Err error
}

// Error describes the failure without token bytes, in a user's words:
// how many replicas confirmed the fencing counter's increment (or why WAIT
// could not tell), then what became of the lease and the token.
func (e *NotReplicatedError) Error() string {
	release := "lease released"
	if !e.Released {
		release = "the lease may stay until it expires with its TTL"
	}
	what := fmt.Sprintf("%d of %d replicas confirmed the fencing counter's increment within %v",
		e.Acknowledged, e.Required, e.Timeout)
	if e.Err != nil {
		what = fmt.Sprintf("WAIT for %d replicas to confirm the fencing counter's increment failed: %v", e.Required, e.Err)
	}
	return fmt.Sprintf("coordination: lock %q: %s; %s; the counter stays incremented (the token is spent)", e.Key, what, release)
}

// Is matches ErrNotReplicated; lease's transport sentinels that apply to
// Err match through Unwrap.
func (e *NotReplicatedError) Is(target error) bool {
	return target == ErrNotReplicated
}

// Unwrap returns the cause of a failed WAIT, or nil.
func (e *NotReplicatedError) Unwrap() error { return e.Err }

// WithReplicas makes an acquisition hand out its token only once WAIT n
// timeout, sent on the connection that ran the acquisition script, reports
// that at least n replicas acknowledged the write. Otherwise, or when WAIT
// fails, the handle is ended — a keep-alive stopped, then the lease
// released — and the acquisition fails with a *NotReplicatedError
// (ErrNotReplicated); the counter stays incremented.
// With lease.WithWait, such a failure ends the wait. It is an option of
// Coordinator.TryAcquire and Acquire only: lease.Locks refuses it
// (lease.ErrInvalidOption).
//
// The script and WAIT are pipelined on a dedicated connection of their own
// (WAIT blocks its socket, and counts the replication of its own
// connection's writes, so it must follow the script there); the lock's
// renewals and release then ride the key's session as usual. It narrows
// the window in which a failover to a lagging replica rolls the counter
// back; it does not close it (see docs/fencing.md): a replica that was not
// among the n can still be promoted, and WAIT says nothing about disk. The
// acquisition blocks for up to timeout more (also when contended, while
// replicas are missing or behind), so keep timeout well below the lease
// duration and give ctx longer than timeout: a ctx that ends during WAIT
// makes the outcome uncertain (lease.ErrOutcomeUnknown; the script is never
// replayed and the lease is deleted in the background, best effort: the
// dedicated connection is closed, not fenced). lease.Locks.Close cuts a
// pending WAIT off the same way, at once (the error then wraps
// conn.ErrWaitStopped), and waits for that clean-up. In cluster mode the dedicated
// connection does not follow redirects: a slot that moved since rueidis last
// read the slot map fails with an error matching lease.ErrDidNotRun
// (nothing ran; trying again is safe).
//
// timeout is rounded up to whole milliseconds. n < 1 or timeout <= 0 is
// rejected with lease.ErrInvalidOption before anything is sent (WAIT with a
// 0 timeout would block forever). WAITAOF is not offered: see
// docs/fencing.md.
func WithReplicas(n int, timeout time.Duration) lease.AcquireOption {
	return lease.WithReplicas(n, timeout)
}

// notReplicated is the error of an acquisition whose increment WAIT did not
// confirm: lease ended its handle before returning (keep-alive stopped,
// then the lease released; see actor.FencedReply), and f says how.
func notReplicated(key string, f *actor.Fenced) error {
	reply := f.Reply
	e := &NotReplicatedError{Key: key, Required: f.Replicas, Timeout: f.Timeout,
		Acknowledged: int(reply.Acknowledged), Released: reply.Released, Err: reply.WaitErr}
	if reply.WaitErr != nil {
		e.Acknowledged = -1
	}
	return e
}
