package conn_test

import (
	"context"
	"errors"
	"fmt"
	. "github.com/respire-go/respire/conn"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Goal: however many callers race for a semaphore of limit 3, at most 3
// hold a permit at once, on every server; every contender is told "full",
// never an error; a released permit is taken by the next caller.
func TestSemaphoreNeverOverLimit_RacingCallersOverRealSockets(t *testing.T) {
	const limit, workers, rounds = 3, 12, 15
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			sem := mustSemaphore(t, s.prefix, "pool", limit)
			var believed, maxBelieved, granted atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			ctx := ctxT(t)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- churn(ctx, s.pool, sem, w, rounds, &believed, &maxBelieved, &granted)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if maxBelieved.Load() > limit || granted.Load() == 0 {
				t.Fatalf("at most %d permits held at once, %d granted; want at most %d, some granted",
					maxBelieved.Load(), granted.Load(), limit)
			}
			if got := mustDo(t, s.pool, sem.HoldersOp()).Holders; got != 0 {
				t.Fatalf("holders after every release = %d; want 0", got)
			}
		})
	}
}

// churn acquires and releases sem rounds times with fresh tokens. believed
// counts the permits callers hold: raised after a granted acquisition,
// lowered before the release is sent, so it never exceeds the true count.
func churn(ctx context.Context, p *Pool, sem Semaphore, worker, rounds int, believed, maxBelieved, granted *atomic.Int64) error {
	for i := range rounds {
		token := fmt.Sprintf("w%d-%d", worker, i)
		res, err := p.Do(ctx, sem.AcquireOp(token, 60000), nil)
		if err != nil {
			return fmt.Errorf("acquire %s: %w", token, err)
		}
		if !res.Owned {
			continue
		}
		granted.Add(1)
		now := believed.Add(1)
		for m := maxBelieved.Load(); now > m && !maxBelieved.CompareAndSwap(m, now); m = maxBelieved.Load() {
		}
		count, err := p.Do(ctx, sem.HoldersOp(), nil)
		if err != nil || count.Holders > int64(sem.Limit) || count.Holders < 1 {
			return fmt.Errorf("holders while %s holds = %d, %v; want 1..%d", token, count.Holders, err, sem.Limit)
		}
		believed.Add(-1)
		if res, err := p.Do(ctx, sem.ReleaseOp(token), nil); err != nil || !res.Owned {
			return fmt.Errorf("release %s = %+v, %v; want released", token, res, err)
		}
	}
	return nil
}

// Goal: a permit's lease is measured on the server's clock (TIME inside
// the script, never the client's): taken at server time t0 with a lease of
// L ms, it is held through t0+L-1 ms and free at t0+L exactly, when the
// next acquisition removes it and takes its place.
func TestSemaphoreScoresOnServerTime_PermitFreedExactlyAtItsLeaseEnd(t *testing.T) {
	for _, s := range clockedSims(t) {
		t.Run(s.name, func(t *testing.T) {
			sem := mustSemaphore(t, "", "one", 1)
			t0 := s.clock.Now().UnixMilli()
			if res := mustDo(t, s.pool, sem.AcquireOp("a", 1000)); !res.Owned {
				t.Fatal("first acquisition refused")
			}
			if got := s.srv.Exec("ZSCORE", sem.HoldersKey, "a"); got != bulkText(strconv.FormatInt(t0+1000, 10)) {
				t.Fatalf("score = %q; want the server's time %d + 1000", got, t0)
			}
			s.clock.Advance(999 * time.Millisecond)
			if res := mustDo(t, s.pool, sem.AcquireOp("b", 1000)); res.Owned {
				t.Fatal("acquired while the only permit has 1 ms left")
			}
			if res := mustDo(t, s.pool, sem.LeaseOp("a")); !res.Owned || res.RemainingMillis != 1 {
				t.Fatalf("lease read 1 ms before the end = %+v; want owned, 1 ms left", res)
			}
			s.clock.Advance(time.Millisecond)
			if res := mustDo(t, s.pool, sem.HoldersOp()); res.Holders != 0 {
				t.Fatalf("holders at the lease end = %d; want 0", res.Holders)
			}
			if res := mustDo(t, s.pool, sem.LeaseOp("a")); res.Owned {
				t.Fatalf("lease read at the lease end = %+v; want not owned", res)
			}
			if res := mustDo(t, s.pool, sem.AcquireOp("b", 1000)); !res.Owned {
				t.Fatal("permit not free at its lease end")
			}
			if got := s.srv.Exec("ZSCORE", sem.HoldersKey, "a"); got != "$-1\r\n" {
				t.Fatalf("expired holder after the next acquisition: ZSCORE = %q; want removed", got)
			}
		})
	}
}

func bulkText(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// Goal: over a real server too, the score is the server's TIME plus the
// lease, and both keys get a TTL covering the lease.
func TestSemaphoreScoresOnServerTime_ScoreIsServerTimePlusLease(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			sem := mustSemaphore(t, s.prefix, "timed", 2)
			before := serverMillis(t, s)
			if res := mustDo(t, s.pool, sem.AcquireOp("a", 30000)); !res.Owned {
				t.Fatal("acquisition refused")
			}
			after := serverMillis(t, s)
			score, err := strconv.ParseInt(s.exec("ZSCORE", sem.HoldersKey, "a"), 10, 64)
			if err != nil || score < before+30000 || score > after+30000 {
				t.Fatalf("score = %d (%v); want server time in [%d, %d] + 30000", score, err, before, after)
			}
			if ttl, _ := strconv.Atoi(s.exec("PTTL", sem.HoldersKey)[1:]); ttl < 29000 || ttl > 30000 {
				t.Fatalf("PTTL %s = %d; want about the 30000 ms lease", sem.HoldersKey, ttl)
			}
		})
	}
}

// serverMillis reads the server's clock with TIME.
func serverMillis(t *testing.T, s primServer) int64 {
	t.Helper()
	parts, err := s.admin.Do(ctxT(t), s.admin.B().Time().Build()).AsStrSlice()
	if err != nil || len(parts) != 2 {
		t.Fatalf("TIME = %q, %v", parts, err)
	}
	sec, _ := strconv.ParseInt(parts[0], 10, 64)
	usec, _ := strconv.ParseInt(parts[1], 10, 64)
	return sec*1000 + usec/1000
}

// Goal: the limit is stored with the semaphore on first use; a caller with
// another limit is refused with a typed error while a holder is live, and
// nothing changes; once no holder is live, the next caller's limit applies.
func TestSemaphoreLimitIsStored_MismatchRefusedWhileHeld(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			two, three := mustSemaphore(t, s.prefix, "jobs", 2), mustSemaphore(t, s.prefix, "jobs", 3)
			if res := mustDo(t, s.pool, two.AcquireOp("a", 60000)); !res.Owned {
				t.Fatal("first acquisition refused")
			}
			if got := storedLimit(s, two); got != "2" {
				t.Fatalf("stored limit = %q; want 2", got)
			}
			_, err := s.pool.Do(ctxT(t), three.AcquireOp("b", 60000), nil)
			var mismatch *LimitMismatchError
			var redisErr *ServerError
			if !errors.Is(err, ErrLimitMismatch) || !errors.As(err, &mismatch) || ClassOf(err) != Definite ||
				!errors.Is(err, ErrServerReply) || errors.Is(err, ErrDidNotRun) || !errors.As(err, &redisErr) {
				t.Fatalf("acquire with limit 3 = %v; want a definite LimitMismatchError wrapping the server reply", err)
			}
			if mismatch.Stored != "2" || mismatch.Requested != 3 {
				t.Fatalf("mismatch = %+v; want stored 2, requested 3", mismatch)
			}
			if got := s.exec("ZCOUNT", two.HoldersKey, "0", "+inf"); got != ":1" || storedLimit(s, two) != "2" {
				t.Fatalf("after the refusal: %s holders, limit %q; want 1 and 2 (unchanged)", got, storedLimit(s, two))
			}
			if res := mustDo(t, s.pool, two.ReleaseOp("a")); !res.Owned {
				t.Fatal("release refused")
			}
			if got := s.exec("EXISTS", two.HoldersKey, two.HoldersKey+":limit"); got != ":0" {
				t.Fatalf("keys after the last release: EXISTS = %s; want 0", got)
			}
			if res := mustDo(t, s.pool, three.AcquireOp("b", 60000)); !res.Owned || storedLimit(s, three) != "3" {
				t.Fatalf("acquire with limit 3 on an idle semaphore = %+v, limit %q; want granted, 3", res, storedLimit(s, three))
			}
		})
	}
}

// storedLimit is the limit stored with sem: the negated score of its
// reserved member ("" when there is none).
func storedLimit(s primServer, sem Semaphore) string {
	score := s.exec("ZSCORE", sem.HoldersKey, SemaphoreLimitMember)
	if limit, ok := strings.CutPrefix(score, "-"); ok {
		return limit
	}
	return ""
}

// Goal: a renewal is refused for a token that holds no permit and for one
// whose lease ended by server time (even before anything removed it): an
// expired permit is lost, never re-taken; the refused renewal changes
// nothing, and a release of it answers "not held".
func TestHolderRenewalNeedsALiveHolder_MissingOrExpiredIsRefused(t *testing.T) {
	for _, s := range clockedSims(t) {
		t.Run(s.name, func(t *testing.T) {
			sem := mustSemaphore(t, "", "r", 2)
			if res := mustDo(t, s.pool, sem.RenewOp("nobody", 1000)); res.Owned {
				t.Fatal("renewal of a token without a permit succeeded")
			}
			mustDo(t, s.pool, sem.AcquireOp("a", 1000))
			s.clock.Advance(500 * time.Millisecond)
			if res := mustDo(t, s.pool, sem.RenewOp("a", 1000)); !res.Owned {
				t.Fatal("renewal of a live permit refused")
			}
			score := s.srv.Exec("ZSCORE", sem.HoldersKey, "a")
			s.clock.Advance(1000 * time.Millisecond) // exactly at the renewed lease end
			if res := mustDo(t, s.pool, sem.RenewOp("a", 1000)); res.Owned {
				t.Fatal("renewal at the lease end succeeded")
			}
			if got := s.srv.Exec("ZSCORE", sem.HoldersKey, "a"); got != score {
				t.Fatalf("score after the refused renewal = %q; want %q (unchanged)", got, score)
			}
			if res := mustDo(t, s.pool, sem.ReleaseOp("a")); res.Owned {
				t.Fatal("release of an expired permit answered released")
			}
			if got := s.srv.Exec("EXISTS", sem.HoldersKey); got != ":0\r\n" {
				t.Fatalf("keys after releasing the only (expired) permit: %q; want none", got)
			}
		})
	}
}

// Goal: on a real server, whose clock the test cannot move, a permit ends
// by the server's clock: every attempt of another caller made while the
// server's time was before the permit's end is refused, the first one made
// at or after it is granted, and the new permit starts no earlier than the
// old one ended.
func TestSemaphoreScoresOnServerTime_ExpiredPermitIsTakenOverByServerTime(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			sem := mustSemaphore(t, s.prefix, "handover", 1)
			if res := mustDo(t, s.pool, sem.AcquireOp("a", 150)); !res.Owned {
				t.Fatal("first acquisition refused")
			}
			endA, _ := strconv.ParseInt(s.exec("ZSCORE", sem.HoldersKey, "a"), 10, 64)
			poll := time.NewTicker(5 * time.Millisecond)
			defer poll.Stop()
			for attempt := 0; ; attempt++ {
				before := serverMillis(t, s)
				token := "b" + strconv.Itoa(attempt)
				res := mustDo(t, s.pool, sem.AcquireOp(token, 60000))
				if !res.Owned {
					if before >= endA {
						t.Fatalf("attempt at server time %d refused; the permit ended at %d", before, endA)
					}
					<-poll.C
					continue
				}
				scoreB, _ := strconv.ParseInt(s.exec("ZSCORE", sem.HoldersKey, token), 10, 64)
				if startB := scoreB - 60000; startB < endA {
					t.Fatalf("granted at server time %d, before the permit's end %d", startB, endA)
				}
				if got := s.exec("ZCOUNT", sem.HoldersKey, "0", "+inf"); got != ":1" {
					t.Fatalf("holders after the take-over = %s; want 1 (the expired permit removed)", got)
				}
				return
			}
		})
	}
}

// Goal: the limit binds for as long as a holder is live, whatever happens
// to keys beside the holders: with a limit-1 permit live, deleting the
// old-style limit key P{N}:sem:limit (as an eviction policy may) does not
// let a caller with limit 3 in; it is refused with the stored limit, and
// the holders are unchanged. A semaphore whose live holders have no stored
// limit at all (a holder added by hand, or by a version that kept the limit
// elsewhere) is refused too, never taken as "no limit".
func TestSemaphoreLimitIsStored_ALimitCannotVanishApartFromTheHolders(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			one, three := mustSemaphore(t, s.prefix, "kept", 1), mustSemaphore(t, s.prefix, "kept", 3)
			if res := mustDo(t, s.pool, one.AcquireOp("a", 60000)); !res.Owned {
				t.Fatal("first acquisition refused")
			}
			s.exec("DEL", one.HoldersKey+":limit")
			_, err := s.pool.Do(ctxT(t), three.AcquireOp("b", 60000), nil)
			var mismatch *LimitMismatchError
			if !errors.As(err, &mismatch) || mismatch.Stored != "1" || mismatch.Requested != 3 || ClassOf(err) != Definite {
				t.Fatalf("limit 3 while a limit-1 permit is live, its old limit key deleted = %v; want LIMITMISMATCH, stored 1", err)
			}
			if res := mustDo(t, s.pool, three.HoldersOp()); res.Holders != 1 {
				t.Fatalf("live permits after the refusal = %d; want 1", res.Holders)
			}

			orphan := mustSemaphore(t, s.prefix, "orphan", 3)
			s.exec("ZADD", orphan.HoldersKey, "99999999999999", "old")
			_, err = s.pool.Do(ctxT(t), orphan.AcquireOp("b", 60000), nil)
			if !errors.As(err, &mismatch) || mismatch.Stored != "" || !errors.Is(err, ErrLimitMismatch) ||
				!strings.Contains(err.Error(), "no stored limit") {
				t.Fatalf("limit 3 on live holders without a stored limit = %v; want LIMITMISMATCH naming no stored limit", err)
			}
			if res := mustDo(t, s.pool, orphan.HoldersOp()); res.Holders != 1 {
				t.Fatalf("live permits after the refusal = %d; want 1 (the one added by hand)", res.Holders)
			}
		})
	}
}
