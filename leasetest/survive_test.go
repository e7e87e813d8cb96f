package leasetest_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// survivalLease is the lease of the survival tests: short, so that two
// renewals after the fault come within about two seconds, and long enough
// that the reconnection and the renewal fit in the half lease left after
// the fault on a loaded machine (800 ms left 0.4 s, which failed at load 30).
const survivalLease = 2 * time.Second

// TestKitConnectionFaultsAreSurvived_DropConnections: after every socket
// is closed, a keep-alive holder renews twice on fresh connections, its
// context never ends, and a Steal is seen at once (by push, tracking the
// key again, or by a renewal sent in the same moment).
func TestKitConnectionFaultsAreSurvived_DropConnections(t *testing.T) {
	forEachProfile(t, func(t *testing.T, srv *leasetest.Server) {
		ctx := boundedCtx(t)
		lock := acquire(t, ctx, srv.Locks(), "report", survivalLease)
		before := lastClientID(srv)
		if n := srv.DropConnections(); n < 2 {
			t.Fatalf("DropConnections() = %d, want at least the session and the watcher", n)
		}
		if err := waitRenewals(ctx, srv, "report", before, 2); err != nil {
			t.Fatalf("no renewals on fresh connections: %v (state %v, cause %v)", err, lock.State(), context.Cause(lock.Context()))
		}
		if err := lock.Context().Err(); err != nil || lock.State() != lease.StateHeld {
			t.Fatalf("after the drop: state %v, Context().Err() = %v; want Held, nil", lock.State(), err)
		}
		srv.Steal("report")
		// Push, tracking the key again, usually sees the steal first; a renewal
		// sent in the same moment may be answered first (LossRefused): both
		// are the steal seen at once, well before the lease ends.
		if loss := lossOf(t, ctx, lock); loss.Reason != lease.LossReadRefused && loss.Reason != lease.LossRefused {
			t.Fatalf("Steal after the drop: loss reason %v, want %v or %v", loss.Reason, lease.LossReadRefused, lease.LossRefused)
		}
	})
}

// TestKitConnectionFaultsAreSurvived_Failover: after a failover to the
// next profile (each profile to another, the last to the first), the
// server runs the new version with the key and its TTL kept, a keep-alive
// holder renews twice on fresh connections, its context never ends, and
// its release deletes its own key.
func TestKitConnectionFaultsAreSurvived_Failover(t *testing.T) {
	forEachProfile(t, func(t *testing.T, srv *leasetest.Server) {
		ctx := boundedCtx(t)
		lock := acquire(t, ctx, srv.Locks(), "report", survivalLease)
		to := sim.Profiles[(indexOf(srv.Profile())+1)%len(sim.Profiles)]
		before := lastClientID(srv)
		if err := srv.Failover(to); err != nil {
			t.Fatalf("Failover(%s) = %v", to, err)
		}
		if srv.Profile() != to {
			t.Errorf("Profile() = %s after Failover(%s)", srv.Profile(), to)
		}
		if pttl, _ := strconv.Atoi(strings.TrimPrefix(reply(srv, "PTTL", "report"), ":")); pttl <= 0 {
			t.Errorf("PTTL after the failover = %d, want the lease kept", pttl)
		}
		if err := waitRenewals(ctx, srv, "report", before, 2); err != nil {
			t.Fatalf("no renewals on fresh connections: %v (state %v, cause %v)", err, lock.State(), context.Cause(lock.Context()))
		}
		if err := lock.Context().Err(); err != nil || lock.State() != lease.StateHeld {
			t.Fatalf("after the failover: state %v, Context().Err() = %v; want Held, nil", lock.State(), err)
		}
		if out, err := lock.Release(ctx); out != lease.Released || err != nil {
			t.Fatalf("Release = %v, %v; want Released", out, err)
		}
	})
}

// indexOf returns p's index in sim.Profiles.
func indexOf(p sim.Profile) int {
	for i, q := range sim.Profiles {
		if q == p {
			return i
		}
	}
	return -1
}

// TestKitConnectionFaultsAreSurvived_FailoverRefusesAnUnknownProfile: an
// unknown profile is an error and changes nothing; "" keeps the profile.
func TestKitConnectionFaultsAreSurvived_FailoverRefusesAnUnknownProfile(t *testing.T) {
	srv := leasetest.Start(t, leasetest.WithProfile(sim.Valkey81))
	srv.Sim().Exec("SET", "k", "v")
	if err := srv.Failover("redis-6.2"); err == nil {
		t.Fatal("Failover(redis-6.2) = nil, want an error")
	}
	if err := srv.Failover(""); err != nil || srv.Profile() != sim.Valkey81 {
		t.Fatalf("Failover(\"\") = %v, profile %s; want nil, %s", err, srv.Profile(), sim.Valkey81)
	}
	if got := reply(srv, "GET", "k"); got != "$1\r\nv" {
		t.Errorf("GET k after the failovers = %q, want the key kept", got)
	}
}
