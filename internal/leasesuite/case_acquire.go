package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/lease"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

func caseTryAcquireThenCloseSendsExactlySetAndOneDelete(t *testing.T, tr Transport) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			srv, locks := managedSim(t, tr, profile)
			ctx := ctxT(t)
			attempt, err := locks.TryAcquire(ctx, "report", 30*time.Second+1)
			if err != nil || !attempt.Acquired() {
				t.Fatalf("TryAcquire = %v, %v; want acquired", attempt.Acquired(), err)
			}
			lock := attempt.Lock()
			if got := lock.Duration(); got != 30001*time.Millisecond {
				t.Fatalf("Duration = %v; want 30.001s (rounded up)", got)
			}
			if lock.Token().Len() != 32 || lock.Key() != "report" || lock.State() != lease.StateHeld {
				t.Fatalf("token len %d, key %q, state %v", lock.Token().Len(), lock.Key(), lock.State())
			}
			if r := lock.RemainingEstimate(); r <= 0 || r > 30001*time.Millisecond {
				t.Fatalf("RemainingEstimate = %v", r)
			}
			if !lock.ExpiresAtEstimate().After(time.Now()) {
				t.Fatalf("ExpiresAtEstimate %v not in the future", lock.ExpiresAtEstimate())
			}
			if err := attempt.Close(); err != nil {
				t.Fatalf("Close = %v", err)
			}
			if err := attempt.Close(); err != nil {
				t.Fatalf("second Close = %v", err)
			}
			want := append([]string{"SET"}, wireSequences[profile].releaseFirst...)
			if got := lockCommands(srv.Log()); !slices.Equal(got, want) {
				t.Fatalf("commands %v; want %v", got, want)
			}
			if got := srv.Exec("EXISTS", "report"); got != ":0\r\n" {
				t.Fatalf("key still exists after Close: %q", got)
			}
		})
	}
}

func caseContendedAttemptSendsOneSetAndAcquireSaysNotAcquired(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis70)
	ctx := ctxT(t)
	srv.Exec("SET", "report", "other", "PX", "60000")
	srv.ResetLog()
	attempt, err := locks.TryAcquire(ctx, "report", time.Minute)
	if err != nil || attempt.Acquired() || attempt.Lock() != nil {
		t.Fatalf("TryAcquire = %v, %v, %v; want unacquired", attempt.Acquired(), attempt.Lock(), err)
	}
	if err := attempt.Close(); err != nil {
		t.Fatalf("Close of an unacquired attempt = %v", err)
	}
	if got := lockCommands(srv.Log()); !slices.Equal(got, []string{"SET"}) {
		t.Fatalf("commands %v; want [SET]", got)
	}
	if _, err := locks.Acquire(ctx, "report", time.Minute); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("Acquire = %v; want ErrNotAcquired", err)
	}
	var zero lease.Attempt
	if zero.Acquired() || zero.Close() != nil {
		t.Fatal("the zero Attempt must be unacquired and Close must do nothing")
	}
}

func caseTwoAcquisitionsGetDifferentTokens(t *testing.T, tr Transport) {
	_, locks := managedSim(t, tr, sim.Redis84)
	ctx := ctxT(t)
	a, err := locks.Acquire(ctx, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := locks.Acquire(ctx, "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Token() == b.Token() {
		t.Fatal("two acquisitions share a token")
	}
}

func caseAcquireValidatesBeforeSending(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis70)
	ctx := ctxT(t)
	cases := []struct {
		name string
		key  string
		ttl  time.Duration
		opts []lease.AcquireOption
		want error
	}{
		{"empty key", "", time.Second, nil, lease.ErrEmptyKey},
		{"zero ttl", "k", 0, nil, lease.ErrInvalidTTL},
		{"negative ttl", "k", -time.Second, nil, lease.ErrInvalidTTL},
		{"negative wait", "k", time.Second, []lease.AcquireOption{lease.WithWait(-time.Millisecond)}, lease.ErrInvalidOption},
		{"zero retry", "k", time.Second, []lease.AcquireOption{lease.WithWait(time.Second), lease.WithRetryEvery(0)}, lease.ErrInvalidOption},
	}
	for _, c := range cases {
		if _, err := locks.TryAcquire(ctx, c.key, c.ttl, c.opts...); !errors.Is(err, c.want) {
			t.Errorf("%s: TryAcquire = %v; want %v", c.name, err, c.want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := locks.TryAcquire(cancelled, "k", time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: TryAcquire = %v; want context.Canceled", err)
	}
	if got := lockCommands(srv.Log()); len(got) != 0 {
		t.Fatalf("sent %v before validation failed", got)
	}
}

func caseReleaseThenReleaseAgainIsAlreadyReleasedAndSendsNothing(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := lock.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v; want Released", out, err)
	}
	if out, err := lock.Release(ctx); out != lease.AlreadyReleased || err != nil {
		t.Fatalf("second Release = %v, %v; want AlreadyReleased", out, err)
	}
	if lock.RemainingEstimate() != 0 || lock.State() != lease.StateReleased {
		t.Fatalf("after release: remaining %v, state %v", lock.RemainingEstimate(), lock.State())
	}
	if ok, err := lock.ResetExpiry(ctx, time.Minute); ok || err != nil {
		t.Fatalf("ResetExpiry after release = %v, %v; want false, nil", ok, err)
	}
	if err := lock.Close(); err != nil {
		t.Fatal(err)
	}
	if got := lockCommands(srv.Log()); !slices.Equal(got, []string{"SET", "DELEX"}) {
		t.Fatalf("commands %v; want [SET DELEX]", got)
	}
}

// A lock's acquisition, renewal and release ride one connection per node
// (its session), so one pipeline batches them all.
func caseALockIsAcquiredRenewedAndReleasedOnOneConnection(t *testing.T, tr Transport) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			srv, locks := managedSim(t, tr, profile)
			ctx := ctxT(t)
			lock, err := locks.Acquire(ctx, "k", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := lock.ResetExpiry(ctx, time.Minute); !ok || err != nil {
				t.Fatalf("ResetExpiry = %v, %v", ok, err)
			}
			if out, err := lock.Release(ctx); out != lease.Released || err != nil {
				t.Fatalf("Release = %v, %v", out, err)
			}
			clients := map[int64][]string{}
			for _, e := range srv.Log() {
				if slices.Contains(lockCommandNames, strings.ToUpper(e.Args[0])) {
					clients[e.ClientID] = append(clients[e.ClientID], e.Args[0])
				}
			}
			if len(clients) != 1 {
				t.Fatalf("lock commands per connection: %v; want one connection", clients)
			}
		})
	}
}

func init() {
	register(
		Case{"TryAcquireThenCloseSendsExactlySetAndOneDelete", caseTryAcquireThenCloseSendsExactlySetAndOneDelete},
		Case{"ContendedAttemptSendsOneSetAndAcquireSaysNotAcquired", caseContendedAttemptSendsOneSetAndAcquireSaysNotAcquired},
		Case{"TwoAcquisitionsGetDifferentTokens", caseTwoAcquisitionsGetDifferentTokens},
		Case{"AcquireValidatesBeforeSending", caseAcquireValidatesBeforeSending},
		Case{"ReleaseThenReleaseAgainIsAlreadyReleasedAndSendsNothing", caseReleaseThenReleaseAgainIsAlreadyReleasedAndSendsNothing},
		Case{"ALockIsAcquiredRenewedAndReleasedOnOneConnection", caseALockIsAcquiredRenewedAndReleasedOnOneConnection},
	)
}
