package leasesuite

import (
	"testing"
	"time"
)

// Renewing a lock that is not ours returns false and changes nothing: no
// key is created and another owner's TTL is untouched.
func caseRenewingMissingExpiredOrReplacedLockChangesNothing(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		srv, locks, ctx := tg.srv, tg.locks(t), ctxT(t)

		// Missing: never created.
		for round := range 2 {
			if ok, err := locks.ResetExpiry(ctx, "missing", tok("me"), time.Minute); ok || err != nil {
				t.Fatalf("round %d: ResetExpiry(missing) = %v, %v; want false, nil", round, ok, err)
			}
			if got := srv.Exec("EXISTS", "missing"); got != ":0\r\n" {
				t.Fatalf("round %d: renewing a missing lock created it: EXISTS = %q", round, got)
			}
		}

		// Expired on the server's (virtual) clock.
		if tg.clock != nil {
			if ok, err := locks.TryTake(ctx, "expiring", tok("me"), 10*time.Second); !ok || err != nil {
				t.Fatalf("TryTake = %v, %v", ok, err)
			}
			tg.clock.Advance(11 * time.Second)
			if ok, err := locks.ResetExpiry(ctx, "expiring", tok("me"), time.Minute); ok || err != nil {
				t.Fatalf("ResetExpiry(expired) = %v, %v; want false, nil", ok, err)
			}
			if got := srv.Exec("EXISTS", "expiring"); got != ":0\r\n" {
				t.Fatalf("renewing an expired lock revived it: EXISTS = %q", got)
			}
		}

		// Replaced by another owner: its TTL stays as it was.
		if ok, err := locks.TryTake(ctx, "taken", tok("other"), 20*time.Second); !ok || err != nil {
			t.Fatalf("TryTake(other) = %v, %v", ok, err)
		}
		for round := range 2 {
			if ok, err := locks.ResetExpiry(ctx, "taken", tok("me"), time.Hour); ok || err != nil {
				t.Fatalf("round %d: ResetExpiry(replaced) = %v, %v; want false, nil", round, ok, err)
			}
		}
		var pttl int64
		if _, err := fmtSscanInt(srv.Exec("PTTL", "taken"), &pttl); err != nil || pttl > 20000 || pttl < 15000 {
			t.Fatalf("other owner's PTTL = %d (%v); want at most the 20000 it was given", pttl, err)
		}
		if tg.clock != nil && pttl != 20000 {
			t.Fatalf("other owner's PTTL = %d on a stopped clock; want exactly 20000", pttl)
		}
		if ok, err := locks.Release(ctx, "taken", tok("me")); ok || err != nil {
			t.Fatalf("Release(other's lock) = %v, %v; want false, nil", ok, err)
		}
		if got := srv.Exec("GET", "taken"); got != "$5\r\nother\r\n" {
			t.Fatalf("other owner's value changed: %q", got)
		}
	})
}

func caseResetExpiryAppliesTTLFromNow(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		srv, locks, ctx := tg.srv, tg.locks(t), ctxT(t)
		if ok, err := locks.TryTake(ctx, "k", tok("me"), 30*time.Second); !ok || err != nil {
			t.Fatalf("TryTake = %v, %v", ok, err)
		}
		if tg.clock != nil {
			tg.clock.Advance(25 * time.Second)
		}
		if ok, err := locks.ResetExpiry(ctx, "k", tok("me"), 10*time.Second+time.Nanosecond); !ok || err != nil {
			t.Fatalf("ResetExpiry = %v, %v; want true", ok, err)
		}
		var pttl int64
		if _, err := fmtSscanInt(srv.Exec("PTTL", "k"), &pttl); err != nil || pttl > 10001 || pttl < 9000 {
			t.Fatalf("PTTL = %d (%v); want 10001 (10s+1ns rounded up, from now)", pttl, err)
		}
		if tg.clock != nil && pttl != 10001 {
			t.Fatalf("PTTL = %d on a stopped clock; want exactly 10001", pttl)
		}
	})
}

func init() {
	register(
		Case{"RenewingMissingExpiredOrReplacedLockChangesNothing", caseRenewingMissingExpiredOrReplacedLockChangesNothing},
		Case{"ResetExpiryAppliesTTLFromNow", caseResetExpiryAppliesTTLFromNow},
	)
}
