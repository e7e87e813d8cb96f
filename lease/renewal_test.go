package lease

import (
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// Renewing a lock that is not ours returns false and changes nothing: no
// key is created and another owner's TTL is untouched.
func TestRenewingMissingExpiredOrReplacedLockChangesNothing(t *testing.T) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			clock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
			srv := startSim(t, sim.Config{Profile: profile, Clock: clock})
			locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
			ctx := ctxT(t)

			// Missing: never created.
			for round := range 2 {
				if ok, err := locks.ResetExpiry(ctx, "missing", tok("me"), time.Minute); ok || err != nil {
					t.Fatalf("round %d: ResetExpiry(missing) = %v, %v; want false, nil", round, ok, err)
				}
				if got := srv.Exec("EXISTS", "missing"); got != ":0\r\n" {
					t.Fatalf("round %d: renewing a missing lock created it: EXISTS = %q", round, got)
				}
			}

			// Expired on the server's clock.
			if ok, err := locks.TryTake(ctx, "expiring", tok("me"), 10*time.Second); !ok || err != nil {
				t.Fatalf("TryTake = %v, %v", ok, err)
			}
			clock.Advance(11 * time.Second)
			if ok, err := locks.ResetExpiry(ctx, "expiring", tok("me"), time.Minute); ok || err != nil {
				t.Fatalf("ResetExpiry(expired) = %v, %v; want false, nil", ok, err)
			}
			if got := srv.Exec("EXISTS", "expiring"); got != ":0\r\n" {
				t.Fatalf("renewing an expired lock revived it: EXISTS = %q", got)
			}

			// Replaced by another owner: its TTL stays as it was.
			if ok, err := locks.TryTake(ctx, "taken", tok("other"), 20*time.Second); !ok || err != nil {
				t.Fatalf("TryTake(other) = %v, %v", ok, err)
			}
			before := srv.Exec("PTTL", "taken")
			for round := range 2 {
				if ok, err := locks.ResetExpiry(ctx, "taken", tok("me"), time.Hour); ok || err != nil {
					t.Fatalf("round %d: ResetExpiry(replaced) = %v, %v; want false, nil", round, ok, err)
				}
			}
			if after := srv.Exec("PTTL", "taken"); after != before || before != ":20000\r\n" {
				t.Fatalf("other owner's PTTL changed: %q → %q (want :20000 both)", before, after)
			}
			if ok, err := locks.Release(ctx, "taken", tok("me")); ok || err != nil {
				t.Fatalf("Release(other's lock) = %v, %v; want false, nil", ok, err)
			}
			if got := srv.Exec("GET", "taken"); got != "$5\r\nother\r\n" {
				t.Fatalf("other owner's value changed: %q", got)
			}
		})
	}
}

func TestResetExpiryAppliesTTLFromNow(t *testing.T) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			clock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
			srv := startSim(t, sim.Config{Profile: profile, Clock: clock})
			locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
			ctx := ctxT(t)
			if ok, err := locks.TryTake(ctx, "k", tok("me"), 30*time.Second); !ok || err != nil {
				t.Fatalf("TryTake = %v, %v", ok, err)
			}
			clock.Advance(25 * time.Second)
			if ok, err := locks.ResetExpiry(ctx, "k", tok("me"), 10*time.Second+time.Nanosecond); !ok || err != nil {
				t.Fatalf("ResetExpiry = %v, %v; want true", ok, err)
			}
			if got := srv.Exec("PTTL", "k"); got != ":10001\r\n" {
				t.Fatalf("PTTL = %q; want :10001 (10s+1ns rounded up, from now)", got)
			}
		})
	}
}
