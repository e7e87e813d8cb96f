package leasesuite

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/lease"
)

// oomLease is the lease of the locks below: long enough that a renewal
// retried a few times fits well inside it on a busy machine.
const oomLease = 4 * time.Second

// TestDidNotRunReplies_AnOOMRenewalIsRetriedUntilTheDeadline: on a private
// real redis-server 7.0 that runs out of memory under noeviction (CONFIG
// SET maxmemory 1), the keep-alive renewals of a lock and of a permit are
// answered OOM. OOM proves the command did not run (a script is refused
// only at its first write, before any effect), so neither handle is lost
// at that reply: both are retried, and once memory is back (maxmemory 0) a
// renewal goes through and both stay held. When the server stays out of
// memory, the permit ends at its lease deadline (not at the first OOM), the
// cause carrying the OOM and matching ErrDidNotRun.
func caseDidNotRunReplies_AnOOMRenewalIsRetriedUntilTheDeadline(t *testing.T, tr Transport) {
	srv := realserver.StartPrivate(t)
	srv.MustExec(t, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	locks := newLocks(t, tr, clientOf([]string{srv.Addr}, "", srv.Password, false), lease.WithoutPush())
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "k", oomLease, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	permit, err := locks.Semaphore("s", 2).Acquire(ctx, oomLease, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer permit.Close()
	held := []*lease.Lock{lock, permit}

	srv.MustExec(t, "CONFIG", "SET", "maxmemory", "1")
	waitOOMReplies(t, srv, held, 4) // the first renewal of each, and retries
	before := []time.Time{lock.ExpiresAtEstimate(), permit.ExpiresAtEstimate()}
	srv.MustExec(t, "CONFIG", "SET", "maxmemory", "0")
	for i, h := range held {
		for !h.ExpiresAtEstimate().After(before[i]) {
			if h.Context().Err() != nil {
				t.Fatalf("%s lost though its renewals only met OOM, which proves they did not run: %v", h.Key(), context.Cause(h.Context()))
			}
			time.Sleep(time.Millisecond)
		}
	}

	// Out of memory for good: the permit's renewal (a ZADD, refused by OOM)
	// never runs again. (The mutex's renewal on Redis 7.0 is now the Lua
	// compare-and-PEXPIRE its session fell back to, which OOM does not
	// refuse: PEXPIRE cannot grow memory.)
	srv.MustExec(t, "CONFIG", "SET", "maxmemory", "1")
	waitDone(t, permit.Context())
	cause := context.Cause(permit.Context())
	var loss *lease.LossError
	if !errors.As(cause, &loss) || loss.Reason != lease.LossDeadline && loss.Reason != lease.LossDeadlineInFlight ||
		!strings.Contains(cause.Error(), "OOM") || !errors.Is(cause, lease.ErrDidNotRun) {
		t.Fatalf("the permit ended with %v; want a deadline loss carrying the renewals' OOM (matching ErrDidNotRun)", cause)
	}
}

// waitOOMReplies waits until the server has answered at least n OOM
// replies (INFO errorstats), failing t when one of held ends first.
func waitOOMReplies(t *testing.T, srv *realserver.Private, held []*lease.Lock, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for oomReplies(t, srv) < n {
		for _, h := range held {
			if h.Context().Err() != nil {
				t.Fatalf("%s lost at an OOM reply to its renewal, which proves the renewal did not run: %v", h.Key(), context.Cause(h.Context()))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server answered %d OOM replies in 10 s; want %d", oomReplies(t, srv), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// oomReplies is the server's count of OOM error replies so far.
func oomReplies(t *testing.T, srv *realserver.Private) int {
	info := srv.MustExec(t, "INFO", "errorstats")
	for _, line := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "errorstat_OOM:count="); ok {
			n, _ := strconv.Atoi(rest)
			return n
		}
	}
	return 0
}

func init() {
	register(Case{"DidNotRunReplies_AnOOMRenewalIsRetriedUntilTheDeadline", caseDidNotRunReplies_AnOOMRenewalIsRetriedUntilTheDeadline})
}
