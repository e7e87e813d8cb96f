// Package election provides leader election on lease locks, as etcd's
// concurrency.Election offers it: Campaign blocks until this process leads,
// Resign hands the leadership on, Leader tells the current leader's label,
// and Observe follows each new leader, and each time there is none.
//
// An election is one lease key: the leader is the holder of the key, which
// a keep-alive renews at about half the lease for as long as it leads, with
// the candidate's label stored after its token (lease.WithOwner). A
// candidate waits for the key push-driven where the server allows it
// (RESP3 client-side tracking: it tries as soon as the key is deleted or
// expires) and polls otherwise. Leadership is a lease: Context ends, with
// the cause, when it ends for any reason — resigned, lost to another owner,
// or not renewed in time because the process was paused (a SIGSTOP, a long
// GC) or cut off — and before the key can have expired on the server, so
// two processes never both see a live Context. What a pause cannot stop is
// a write its leader already decided to make: protect such writes with a
// fencing token (package coordination). Campaign's ctx bounds the wait
// only; run the leader's work under ContextFrom(ctx), with ctx the
// process's (signal.NotifyContext), so that it stops on a shutdown too, and
// Resign when it returns: the next candidate then leads at once instead of
// after the lease (ExampleElection_ContextFrom).
//
// A takeover takes at most a lease when the leader dies or stops (its key
// expires: the time left since its last renewal, between half a lease and
// a lease) and a round trip or two when it resigns. Measured on a real
// Redis 7.0 over loopback with a 4 s lease, the leader a child process of
// the test (TestElectionSurvivesALeadersDeath_*; docs/architecture.md,
// "Leader election"): after a SIGKILL at a random moment 2.58–3.92 s (9
// runs), after a SIGSTOP 4.00 s (the pause came right after a renewal), after
// a graceful Resign 0.47–1.12 ms at the median from the delete's reply
// (at most 2.4 ms, 30 runs).
//
// Observe follows the leaders — and tells when there is none — with a key
// watch on the node's tracking connection (actor.Driver.WatchKey): each
// change of the key is pushed and the key read again, at least every
// second; without push it reads the key every 100 ms.
package election

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/respire-go/respire/lease"
)

// Errors of the election. Match them with errors.Is.
var (
	// ErrNoLeader: the election has no leader now (Leader).
	ErrNoLeader = errors.New("election: no leader")
	// ErrNotLeader: this Election does not lead (the cause of Context
	// before Campaign succeeded and after the leadership ended).
	ErrNotLeader = errors.New("election: not the leader")
	// ErrCampaigning: Campaign was called while another Campaign of the
	// same Election was waiting, or while it led.
	ErrCampaigning = errors.New("election: already campaigning or leading")
)

// Election is one candidate in the election named by its key. It is safe
// for concurrent use; one Campaign runs at a time. Several processes (or
// several Elections of one process) campaigning on the same key make one
// leader at a time. Create it with New; the zero value is not usable.
type Election struct {
	locks *lease.Locks
	key   string
	ttl   time.Duration

	mu          sync.Mutex
	campaigning bool        // a Campaign is waiting
	leader      *lease.Lock // the lease of the latest leadership: held, or ended (lost, resigned) until the next Campaign
	resigned    bool        // Resign was called for leader: a new Campaign may start even while its delete runs
}

// New returns a candidate for the election whose lease key is key (with
// locks' key prefix), with leadership leases of ttl (renewed at about half
// of it: the longest a dead leader keeps the election waiting). It sends
// nothing. It fails with an error matching lease.ErrEmptyKey or
// lease.ErrInvalidTTL for an empty key or a non-positive ttl, and for nil
// locks.
func New(locks *lease.Locks, key string, ttl time.Duration) (*Election, error) {
	switch {
	case locks == nil:
		return nil, errors.New("election: New: nil Locks")
	case key == "":
		return nil, &opError{op: "New", err: lease.ErrEmptyKey}
	case ttl <= 0:
		return nil, &opError{op: "New", key: key, err: fmt.Errorf("%w (got %v)", lease.ErrInvalidTTL, ttl)}
	}
	return &Election{locks: locks, key: key, ttl: ttl}, nil
}

// Key returns the election's lease key, without the key prefix.
func (e *Election) Key() string { return e.key }

// Campaign blocks until this candidate leads the election, then returns nil
// with the lease held and kept alive; label (a host, a pid, a job id —
// never a secret: see lease.WithOwner for what it may hold) is what Leader
// and Observe tell of it. It waits for as long as ctx lasts, returning its
// cause when ctx ends first (nothing is then held: an acquisition that the
// server may have applied is cleaned up). It fails at once with
// ErrCampaigning while another Campaign of this Election waits or while
// it leads, with lease.ErrInvalidOption for a label lease refuses, and
// with what every later try would meet (lease.ErrClosed, a
// *lease.PermissionError without CLIENT ID/KILL permission, NOPERM).
//
// ctx bounds the wait only, as lease.Locks.Acquire's does (and
// net.Dialer.DialContext's for a connection): the leadership won lasts
// until Resign or its loss, whatever happens to ctx. To stop the leader's
// work on whichever comes first, a shutdown or the end of the leadership,
// run it under ContextFrom(ctx), and Resign when it returns.
func (e *Election) Campaign(ctx context.Context, label string) error {
	e.mu.Lock()
	if e.campaigning || e.leader != nil && !e.resigned && e.leader.Context().Err() == nil {
		e.mu.Unlock()
		return ErrCampaigning
	}
	e.campaigning, e.leader, e.resigned = true, nil, false
	e.mu.Unlock()
	lock, err := e.locks.Acquire(ctx, e.key, e.ttl, lease.WithWaitUntilDone(), lease.WithKeepAlive(), lease.WithOwner(label))
	e.mu.Lock()
	defer e.mu.Unlock()
	e.campaigning = false
	if err != nil {
		return &opError{op: "Campaign", key: e.key, err: err}
	}
	e.leader = lock
	return nil
}

// Resign ends this candidate's leadership: its keep-alive stops and its
// lease is deleted, so that a waiting candidate leads within a round trip
// or two, and Context ends with cause lease.ErrReleased. It returns nil
// when this Election does not lead (never did, resigned already, or lost
// the lease). ctx bounds the delete; an error matching
// lease.ErrOutcomeUnknown means it may not have run (the leadership has
// ended all the same: Context is done, and the lease ends by its expiry at
// the latest). It blocks for the round trip.
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	lock := e.leader
	e.resigned = lock != nil
	e.mu.Unlock()
	if lock == nil {
		return nil
	}
	if _, err := lock.Release(ctx); err != nil {
		_ = lock.Close() // a delete not sent: stop renewing, and release with Close's own bound
		return &opError{op: "Resign", key: e.key, err: err}
	}
	return nil
}

// Context returns the context of this candidate's leadership: it ends, with
// the cause, when the leadership does, before the lease can have expired on
// the server — lease.ErrReleased after Resign, a loss matching
// lease.ErrOwnershipLost (another owner took or deleted the key, or the
// lease was not renewed in time). Before a Campaign succeeded (and while a
// new one waits) it is a context already ended with cause ErrNotLeader. It
// does not end when the ctx given to Campaign does: see ContextFrom. It
// does not block.
func (e *Election) Context() context.Context {
	lock := e.current()
	if lock == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(ErrNotLeader)
		return ctx
	}
	return lock.Context()
}

// ContextFrom returns a context derived from parent that also ends when
// this candidate's leadership does, with the leadership's cause (see
// Context): run the leader's work under ContextFrom(ctx), with ctx the
// process's (signal.NotifyContext), so that it stops on whichever comes
// first, a shutdown or the end of the leadership. Its Err and
// context.Cause are exact, as lease.Lock.ContextFrom's are. Without a
// leadership it is already ended with cause ErrNotLeader. Call cancel when
// the work is done, to free the watch; it does not resign. It does not
// block.
func (e *Election) ContextFrom(parent context.Context) (context.Context, context.CancelFunc) {
	lock := e.current()
	if lock == nil {
		ctx, cancel := context.WithCancelCause(parent)
		cancel(ErrNotLeader)
		return ctx, func() { cancel(context.Canceled) }
	}
	return lock.ContextFrom(parent)
}

// current returns the lease of the latest leadership, nil before one.
func (e *Election) current() *lease.Lock {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader
}

// Leader returns the label of the election's current leader (as its
// Campaign gave it; "" for a leader that gave none), or an error matching
// ErrNoLeader when nobody leads. It reads the key (lease.Locks.Holder,
// which needs +get +evalsha +eval +pttl), never a token; it blocks for the
// round trips.
func (e *Election) Leader(ctx context.Context) (string, error) {
	holder, found, err := e.locks.Holder(ctx, e.key)
	switch {
	case err != nil:
		return "", &opError{op: "Leader", key: e.key, err: err}
	case !found:
		return "", ErrNoLeader
	}
	return holder.Label, nil
}

// opError is the error of an election call that failed: it reads
// "election: Op "key": reason" once — the reason without the lease call it
// came from ("lease: Acquire …") — and matches, with errors.Is and
// errors.As, everything err does (lease's sentinels, *lease.OpError, ctx's
// cause).
type opError struct {
	op, key string
	err     error
}

func (e *opError) Error() string {
	reason := e.err
	var call *lease.OpError
	if errors.As(e.err, &call) && error(call) == e.err {
		reason = call.Err
	}
	text := strings.TrimPrefix(reason.Error(), "lease: ")
	if e.key == "" {
		return "election: " + e.op + ": " + text
	}
	return fmt.Sprintf("election: %s %q: %s", e.op, e.key, text)
}

func (e *opError) Unwrap() error { return e.err }
