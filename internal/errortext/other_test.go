package errortext

import (
	"context"
	"testing"
	"time"

	"github.com/respire-go/respire/coordination"
	"github.com/respire-go/respire/election"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
)

// coordinationMessages: the fencing-token locks' errors, from real calls.
func coordinationMessages(t *testing.T) []message {
	srv := leasetest.Start(t)
	ctx := t.Context()
	coord, err := coordination.New(srv.Locks())
	if err != nil {
		t.Fatal(err)
	}
	lock, err := coord.Acquire(ctx, "{inv}:lease", "{inv}:fence", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	return []message{
		{name: "coordination.New(nil)", err: errOf(coordination.New(nil)), is: []error{coordination.ErrNilLocks}},
		{name: `Coordinator.Acquire("k", "k", 1m)`, err: errOf(coord.Acquire(ctx, "k", "k", time.Minute)),
			is: []error{coordination.ErrSameKeys}},
		{name: "Coordinator.Acquire of a held key", err: errOf(coord.Acquire(ctx, "{inv}:lease", "{inv}:fence", time.Minute)),
			is: []error{lease.ErrNotAcquired}},
		{name: "Coordinator.Acquire(WithReplicas(1, 10ms)) with no replica",
			err: errOf(coord.Acquire(ctx, "{inv2}:lease", "{inv2}:fence", time.Minute, lease.WithReplicas(1, 10*time.Millisecond))),
			is:  []error{coordination.ErrNotReplicated}, as: []any{new(*coordination.NotReplicatedError)}},
	}
}

// electionMessages: the election's errors, from real calls.
func electionMessages(t *testing.T) []message {
	srv := leasetest.Start(t)
	ctx := t.Context()
	leader, err := election.New(srv.Locks(), "elections:scheduler", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	otherLocks := srv.Locks()
	// Warm otherLocks' session (its permission probe answered once) so that
	// the short campaign below ends in its wait, on a loaded machine too.
	warm, err := election.New(otherLocks, "elections:warm", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Campaign(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	if err := warm.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := election.New(otherLocks, "elections:scheduler", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, noLeader := other.Leader(ctx)
	notLeader := context.Cause(other.Context())
	if err := leader.Campaign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	defer leader.Resign(ctx)
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	return []message{
		{name: "election.New(nil, …)", err: errOf(election.New(nil, "e", time.Minute))},
		{name: `election.New(locks, "", 1m)`, err: errOf(election.New(srv.Locks(), "", time.Minute)), is: []error{lease.ErrEmptyKey}},
		{name: `election.New(locks, "e", 0)`, err: errOf(election.New(srv.Locks(), "e", 0)), is: []error{lease.ErrInvalidTTL}},
		{name: "Election.Leader with nobody leading", err: noLeader, is: []error{election.ErrNoLeader}},
		{name: "Election.Context() before Campaign", err: notLeader, is: []error{election.ErrNotLeader}},
		{name: "Election.Campaign while leading", err: leader.Campaign(ctx, "a"), is: []error{election.ErrCampaigning}},
		{name: "Election.Campaign, ctx's deadline while another leads", err: other.Campaign(waitCtx, "b"),
			is: []error{context.DeadlineExceeded}},
		{name: `Election.Campaign(ctx, "a\nb")`, err: other.Campaign(ctx, "a\nb"), is: []error{lease.ErrInvalidOption}},
	}
}
