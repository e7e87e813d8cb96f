package errortext

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/wire"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// isRelease reports whether args is a release command (the profile
// Redis 8.4's DELEX).
func isRelease(args []string) bool { return strings.EqualFold(args[0], "DELEX") }

// isRenewal reports whether args is a renewal (SET … IFEQ).
func isRenewal(args []string) bool {
	return strings.EqualFold(args[0], "SET") && slices.ContainsFunc(args, func(a string) bool { return strings.EqualFold(a, "IFEQ") })
}

// transportMessages: what the server or the connection did, from real
// calls on a Redis 8.4 profile with scripted faults.
func transportMessages(t *testing.T) []message {
	srv := leasetest.Start(t, leasetest.WithProfile(sim.Redis84))
	locks := srv.Locks()
	ctx := t.Context()
	return []message{
		unansweredRelease(t, srv, locks),
		refusedAcquire(t, srv, locks),
		deniedFencing(t, srv),
		failedRenewal(t, srv, locks),
		closedClient(t, srv),
		{name: "Do, the release after the work refused (NOPERM)", err: func() error {
			srv.Sim().Inject(sim.Fault{Kind: sim.FailWith, Command: "DELEX", Times: 1,
				Error: "NOPERM User app has no permissions to run the 'delex' command"})
			return locks.Do(ctx, "t:do", time.Minute, func(context.Context) error { return nil })
		}(), is: []error{lease.ErrServerReply}, as: []any{new(*lease.WorkError)}},
	}
}

// unansweredRelease: a release whose reply never comes before the
// caller's deadline.
func unansweredRelease(t *testing.T, srv *leasetest.Server, locks *lease.Locks) message {
	lock := held(t, locks, "t:release")
	gate := make(chan struct{})
	defer close(gate)
	srv.Sim().Inject(sim.Fault{Kind: sim.DelayReply, Gate: gate, Match: isRelease, Times: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := lock.Release(ctx)
	return message{name: "Lock.Release, no reply before ctx's deadline", err: err,
		is: []error{lease.ErrOutcomeUnknown, context.DeadlineExceeded}}
}

// refusedAcquire: the server answers the acquisition with an error reply.
func refusedAcquire(t *testing.T, srv *leasetest.Server, locks *lease.Locks) message {
	srv.Sim().Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Times: 1,
		Error: "NOPERM User app has no permissions to access the 't:denied' key"})
	return message{name: "Acquire refused by the server (NOPERM)", err: errOf(locks.Acquire(t.Context(), "t:denied", time.Minute)),
		is: []error{lease.ErrServerReply}, as: []any{new(*conn.ServerError)}}
}

// deniedFencing: a keep-alive lock's user may not run CLIENT ID.
func deniedFencing(t *testing.T, srv *leasetest.Server) message {
	srv.Sim().Inject(sim.Fault{Kind: sim.FailWith, Command: "CLIENT", Match: func(args []string) bool {
		return len(args) == 2 && strings.EqualFold(args[1], "ID")
	}, Times: 1, Error: "NOPERM User app has no permissions to run the 'client|id' command"})
	return message{name: "Acquire(WithKeepAlive()) without CLIENT ID permission",
		err: errOf(srv.Locks().Acquire(t.Context(), "t:fenced", time.Minute, lease.WithKeepAlive())),
		is:  []error{lease.ErrFencingNotPermitted}, as: []any{new(*lease.PermissionError)}}
}

// failedRenewal: the server refuses a keep-alive renewal with an error
// reply.
func failedRenewal(t *testing.T, srv *leasetest.Server, locks *lease.Locks) message {
	lock, err := locks.Acquire(t.Context(), "t:renewal", 300*time.Millisecond, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	srv.Sim().Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Match: isRenewal, Times: 1,
		Error: "NOPERM User app has no permissions to run the 'set' command"})
	return message{name: "Lock.Context(), a renewal refused by the server (NOPERM)", err: ended(t, lock.Context()),
		is: []error{lease.ErrOwnershipLost, lease.ErrServerReply}, as: []any{new(*lease.RenewalFailureError)}}
}

// closedClient: the user's client closed under a keep-alive lock (here
// respire-go's own, internal/wire, named "leasetest" as leasetest's
// clients are; an adapter's error names its client: "rueidis", "go-redis").
func closedClient(t *testing.T, srv *leasetest.Server) message {
	client := wire.New(wire.Options{Addrs: []string{srv.Addr()}, Password: srv.Password(), Name: "leasetest"})
	locks, err := lease.New(client)
	if err != nil {
		t.Fatal(err)
	}
	defer locks.Close()
	lock, err := locks.Acquire(t.Context(), "t:client", 300*time.Millisecond, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	client.Close()
	return message{name: "Lock.Context(), the client closed before the Locks", err: ended(t, lock.Context()),
		is: []error{lease.ErrClientClosed}}
}

// builtMessages: causes of rare paths, built as the library builds them
// (a loss's reason and the error behind it).
func builtMessages(t *testing.T) []message {
	timeout := errors.New("read tcp 127.0.0.1:50312->127.0.0.1:6379: i/o timeout")
	uncertain := func(op string) error {
		return &conn.Error{Class: conn.Uncertain, Op: op, Addr: "127.0.0.1:6379", Err: timeout}
	}
	readonly := &conn.Error{Class: conn.Definite, Op: "extend", Addr: "127.0.0.1:6379", Code: "READONLY",
		Err: &conn.ServerError{Code: "READONLY", Message: "READONLY You can't write against a read only replica."}}
	loss := func(reason lease.LossReason, err error) message {
		return message{name: "Lock.Context(), *LossError " + reason.String(), err: &lease.LossError{Reason: reason, Err: err},
			is: []error{lease.ErrOwnershipLost}, as: []any{new(*lease.LossError)}}
	}
	return []message{
		loss(lease.LossRenewalUnknown, uncertain("extend")),
		loss(lease.LossReleaseUnknown, uncertain("release")),
		loss(lease.LossDeadline, nil),
		loss(lease.LossDeadline, readonly),
		loss(lease.LossDeadlineInFlight, nil),
		{name: "Acquire, the reply came after the lease could have expired",
			err: &lease.OpError{Op: "Acquire", Key: "k", Err: lease.ErrAcquiredTooLate}, is: []error{lease.ErrAcquiredTooLate}},
		{name: "Acquire, no reply (outcome unknown)", err: &lease.OpError{Op: "Acquire", Key: "k", Err: uncertain("acquire")},
			is: []error{lease.ErrOutcomeUnknown}},
		{name: "Acquire, not sent (dial refused)", err: &lease.OpError{Op: "Acquire", Key: "k", Err: &conn.Error{Class: conn.NotSubmitted,
			Op: "open", Addr: "127.0.0.1:6379", Err: errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")}},
			is: []error{lease.ErrNotSubmitted}},
		{name: "Acquire, a reply proving it did not run (LOADING)", err: &lease.OpError{Op: "Acquire", Key: "k",
			Err: &conn.Error{Class: conn.Definite, Op: "acquire", Addr: "127.0.0.1:6379", Code: "LOADING",
				Err: &conn.ServerError{Code: "LOADING", Message: "LOADING Redis is loading the dataset in memory"}}},
			is: []error{lease.ErrDidNotRun, lease.ErrServerReply}},
	}
}
