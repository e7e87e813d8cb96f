package leasesuite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/lease"
)

// findInfo returns the listed lock of kind named key.
func findInfo(t *testing.T, infos []lease.LockInfo, kind lease.LockKind, key string) lease.LockInfo {
	t.Helper()
	for _, in := range infos {
		if in.Kind == kind && in.Key == key {
			return in
		}
	}
	t.Fatalf("List has no %s %q: %+v", kind, key, infos)
	return lease.LockInfo{}
}

// caseListShowsWhoHoldsWhat_NeverAToken: List reports a labelled mutex
// (owner label, lease left, one fair waiter), a semaphore (permits and
// limit), a read/write lock (writer's label) and a raw-token key (no
// label), only the keys its pattern matches, and no byte of any token;
// WithListLimit truncates with ErrListTruncated; a limit below 1 is
// refused before anything is sent.
func caseListShowsWhoHoldsWhat_NeverAToken(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t).WithKeyPrefix("app:")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		job, err := locks.Acquire(ctx, "job:1", time.Minute, lease.WithOwner("worker-7"), lease.WithFairWait())
		if err != nil {
			t.Fatal(err)
		}
		defer job.Close()
		fairQueue(t, ctx, locks, "job:1", 0, 1, -1)
		raw := lease.NewToken()
		if ok, err := locks.TryTake(ctx, "raw", raw, time.Minute); !ok || err != nil {
			t.Fatalf("TryTake = %v, %v", ok, err)
		}
		sem := locks.Semaphore("pool", 3)
		for range 2 {
			p, err := sem.Acquire(ctx, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
		}
		w, err := locks.RWLock("doc").Lock(ctx, time.Minute, lease.WithOwner("editor"))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		other, err := tg.locks(t).Acquire(ctx, "elsewhere", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()

		infos, err := locks.List(ctx, "*")
		if err != nil {
			t.Fatalf("List = %v", err)
		}
		if len(infos) != 4 {
			t.Fatalf("List = %+v; want 4 locks (job:1, raw, pool, doc), nothing outside the view", infos)
		}
		m := findInfo(t, infos, lease.KindMutex, "job:1")
		if m.Owner != "worker-7" || !m.Held || m.Waiters != 1 || m.Remaining <= 0 || m.Remaining > time.Minute {
			t.Fatalf("job:1 = %+v; want held by worker-7, 1 waiter, lease left in (0, 1m]", m)
		}
		if r := findInfo(t, infos, lease.KindMutex, "raw"); r.Owner != "" || !r.Held {
			t.Fatalf("raw = %+v; want held, no label", r)
		}
		if s := findInfo(t, infos, lease.KindSemaphore, "pool"); s.Holders != 2 || s.Limit != 3 || s.Remaining <= 0 {
			t.Fatalf("pool = %+v; want 2 permits of 3", s)
		}
		if d := findInfo(t, infos, lease.KindRWLock, "doc"); d.Owner != "editor" || !d.Held || d.Holders != 0 {
			t.Fatalf("doc = %+v; want written by editor, no reader", d)
		}
		text := fmt.Sprintf("%+v %#v", infos, infos)
		if strings.Contains(text, string(raw.Bytes())) || strings.Contains(strings.ToUpper(text), raw.Hex()) {
			t.Fatalf("List printed a token: %s", text)
		}
		if only, err := locks.List(ctx, "job:*"); err != nil || len(only) != 1 || only[0].Key != "job:1" {
			t.Fatalf("List(job:*) = %+v, %v; want job:1 alone", only, err)
		}
		if some, err := locks.List(ctx, "*", lease.WithListLimit(1)); !errors.Is(err, lease.ErrListTruncated) || len(some) != 1 {
			t.Fatalf("List with limit 1 = %d locks, %v; want 1 and ErrListTruncated", len(some), err)
		}
		if _, err := locks.List(ctx, "*", lease.WithListLimit(0)); !errors.Is(err, lease.ErrInvalidOption) {
			t.Fatalf("List with limit 0 = %v; want ErrInvalidOption", err)
		}
	})
}

// caseListShowsWhoHoldsWhat_EveryPrimaryOfARealCluster: List walks every
// primary of a real 3-master cluster: 24 locks spread over them are all
// listed, each with its owner label.
func caseListShowsWhoHoldsWhat_EveryPrimaryOfARealCluster(t *testing.T, tr Transport) {
	addrs, password := realCluster70(t)
	realserver.Lock(t, strings.Join(addrs, ","))
	locks := newLocks(t, tr, clientOf(addrs, "", password, true)).WithKeyPrefix(fmt.Sprintf("list:%d:", time.Now().UnixNano()))
	ctx := ctxT(t)
	for i := range 24 {
		l, err := locks.Acquire(ctx, fmt.Sprintf("job-%d", i), time.Minute, lease.WithOwner(fmt.Sprintf("w%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}
	infos, err := locks.List(ctx, "*")
	if err != nil || len(infos) != 24 {
		t.Fatalf("List = %d locks, %v; want the 24 of every primary", len(infos), err)
	}
	for _, in := range infos {
		if want := "w" + strings.TrimPrefix(in.Key, "job-"); in.Owner != want || !in.Held {
			t.Fatalf("%+v; want held by %s", in, want)
		}
	}
}

func init() {
	register(
		Case{"ListShowsWhoHoldsWhat_NeverAToken", caseListShowsWhoHoldsWhat_NeverAToken},
		Case{"ListShowsWhoHoldsWhat_EveryPrimaryOfARealCluster", caseListShowsWhoHoldsWhat_EveryPrimaryOfARealCluster},
	)
}
