package leasesuite

import (
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
)

// TestSemaphoreLimitIsStored_NoKeyBesideTheHoldersLiftsTheLimit: the
// issue's scenario through the handles. With a limit-1 permit live,
// deleting the limit key of older versions, {n}:sem:limit (an eviction
// policy may: it had a TTL of its own), does not let Semaphore(n, 3) in:
// its Acquire, even with a long wait, fails at once with ErrLimitMismatch
// (stored limit 1), the first permit's Context stays live and one permit
// is counted. Live permits with no stored limit at all (one added by hand)
// are refused the same way, never taken as "no limit".
func caseSemaphoreLimitIsStored_NoKeyBesideTheHoldersLiftsTheLimit(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t, lease.WithoutPush())
		ctx := ctxT(t)
		first, err := locks.Semaphore("n", 1).Acquire(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer first.Close()
		tg.srv.Exec("DEL", "{n}:sem:limit")
		second, err := locks.Semaphore("n", 3).Acquire(ctx, time.Minute, lease.WithWait(wrongTypeWait))
		var mismatch *lease.LimitMismatchError
		if !errors.Is(err, lease.ErrLimitMismatch) || !errors.As(err, &mismatch) || mismatch.Stored != "1" || mismatch.Requested != 3 {
			if second != nil {
				_ = second.Close()
			}
			t.Fatalf("Semaphore(n, 3).Acquire beside a live limit-1 permit = %v; want ErrLimitMismatch, stored 1", err)
		}
		if n, err := locks.Semaphore("n", 1).Holders(ctx); n != 1 || err != nil || first.Context().Err() != nil {
			t.Fatalf("after the refusal: %d live permits (%v), first permit's Context %v; want 1, live", n, err, first.Context().Err())
		}

		tg.srv.Exec("ZADD", "{orphan}:sem", "99999999999999", "by-hand")
		_, err = locks.Semaphore("orphan", 3).Acquire(ctx, time.Minute, lease.WithWait(wrongTypeWait))
		if !errors.As(err, &mismatch) || mismatch.Stored != "" {
			t.Fatalf("Semaphore(orphan, 3).Acquire beside a live permit with no stored limit = %v; want ErrLimitMismatch, none stored", err)
		}
	})
}

func init() {
	register(Case{"SemaphoreLimitIsStored_NoKeyBesideTheHoldersLiftsTheLimit", caseSemaphoreLimitIsStored_NoKeyBesideTheHoldersLiftsTheLimit})
}
