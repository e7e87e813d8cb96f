package conn_test

import (
	"errors"
	. "github.com/respire-go/respire/conn"
	"strconv"
	"strings"
	"testing"
)

// Goal: a permit's and a reader's renewals ride in one ExtendMany with a
// mutex's, each answered as the script answers (renewed, not a live
// holder), also right after SCRIPT FLUSH (NOSCRIPT: that request finishes
// on its own with EVAL); a request that is no renewal is refused, not
// sent, and the others still go.
func TestHolderRenewalsRideTheBatch_MixedBatchOnOneSession(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			ctx := ctxT(t)
			sem := mustSemaphore(t, s.prefix, "batch", 2)
			rw := mustRWLock(t, s.prefix, "batch")
			mutex := s.prefix + "{batch}:mutex"
			mustDo(t, s.pool, AcquireOp(mutex, "m", 10000))
			mustDo(t, s.pool, sem.AcquireOp("p", 10000))
			mustDo(t, s.pool, rw.ReadAcquireOp("r", 10000))
			sess, err := s.pool.SessionForKey(ctx, sem.HoldersKey)
			if err != nil {
				t.Fatal(err)
			}
			held := SemaphoreOfHolders(sem.HoldersKey, 0)
			requests := []ExtendRequest{
				{Key: mutex, Token: "m", TTLMillis: 90000},
				{Op: held.RenewOp("p", 90000)},
				{Op: RWLockOfKey(rw.ReadersKey).ReadRenewOp("r", 90000)},
				{Op: held.RenewOp("nobody", 90000)},
				{Op: held.ReleaseOp("p")}, // not a renewal
			}
			for round := range 2 {
				if round == 0 {
					s.exec("SCRIPT", "FLUSH")
				}
				rs := sess.ExtendMany(ctx, requests)
				for i, want := range []bool{true, true, true, false} {
					if rs[i].Err != nil || rs[i].Owned != want {
						t.Fatalf("round %d request %d: %+v; want owned=%v", round, i, rs[i], want)
					}
				}
				if !errors.Is(rs[4].Err, ErrNotBatchable) || ClassOf(rs[4].Err) != NotSubmitted {
					t.Fatalf("round %d: a release in the batch = %v; want NotSubmitted, ErrNotBatchable", round, rs[4].Err)
				}
			}
			if got := s.exec("ZCOUNT", sem.HoldersKey, "0", "+inf"); got != ":1" {
				t.Fatalf("holders = %s; want 1 (the release was not sent)", got)
			}
			for _, k := range []string{mutex, sem.HoldersKey, rw.ReadersKey} {
				if ms, _ := strconv.Atoi(strings.TrimPrefix(s.exec("PTTL", k), ":")); ms < 80000 {
					t.Fatalf("PTTL %s = %d; want about 90000 after the batched renewal", k, ms)
				}
			}
		})
	}
}

// Goal: WatchScoreMany tracks sorted-set keys as WatchReadMany tracks
// strings: each read says whether its member is in the set, and the next
// change of each key (a renewal, a release, its deletion) reaches the
// handler.
func TestPushDetectsLoss_WatchScoreManyReadsMembers(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			p := s.pool
			inv := watchInvalidations(p)
			sem := mustSemaphore(t, s.prefix, "w", 3)
			rw := mustRWLock(t, s.prefix, "w")
			mustDo(t, p, sem.AcquireOp("a", 60000))
			mustDo(t, p, rw.ReadAcquireOp("r", 60000))
			reads := []MemberRead{{sem.HoldersKey, "a"}, {sem.HoldersKey, "gone"}, {rw.ReadersKey, "r"}, {s.prefix + "{w}:nothing", "x"}}
			results := p.WatchScoreMany(ctxT(t), reads, nil)
			for i, want := range []bool{true, false, true, false} {
				if results[i].Err != nil || results[i].Found != want || results[i].Token != "" {
					t.Fatalf("read %d (%+v): %+v; want found=%v", i, reads[i], results[i], want)
				}
			}
			mustDo(t, p, sem.RenewOp("a", 90000))
			mustDo(t, p, rw.ReadReleaseOp("r"))
			inv.waitFor(t, []string{sem.HoldersKey, rw.ReadersKey})
		})
	}
}
