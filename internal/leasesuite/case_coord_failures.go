package leasesuite

import (
	"context"
	"errors"
	"fmt"
	"github.com/respire-go/respire/coordination"
	"github.com/respire-go/respire/internal/realserver"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/simtest"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// isFencedScript matches the fenced acquisition command.
func isFencedScript(args []string) bool {
	if len(args) < 3 {
		return false
	}
	name := strings.ToUpper(args[0])
	return (name == "EVALSHA" || name == "EVAL") &&
		(args[1] == conn.FencedAcquireScriptSHA || args[1] == conn.FencedAcquireScript)
}

// simCoordinator starts a sim server of profile with the fenced script
// already cached (so the one command is EVALSHA) and a Coordinator on it.
func simCoordinator(t *testing.T, tr Transport, profile sim.Profile) (*sim.Server, *coordination.Coordinator) {
	t.Helper()
	srv := startCoordSim(t, profile)
	srv.Exec("SCRIPT", "LOAD", conn.FencedAcquireScript)
	return srv, newCoordinator(t, tr, []string{srv.Addr()}, simPassword, "")
}

func assertLeaseGoneAfterOneScript(t *testing.T, srv *sim.Server, c *coordination.Coordinator) {
	t.Helper()
	locksOf(c).Close() // waits for the background clean-up
	if n := fencedScripts(srv.Log()); n != 1 {
		t.Errorf("fenced scripts sent = %d; want exactly 1 (never replayed)", n)
	}
	if got := srv.Exec("EXISTS", leaseKey); got != ":0\r\n" {
		t.Errorf("lease EXISTS = %q; want it released", got)
	}
	if got := srv.Exec("GET", counterKey); got != "$1\r\n1\r\n" {
		t.Errorf("counter = %q; want 1 (the token is spent)", got)
	}
}

func caseAcceptedAcquisitionIsNotReplayedAfterDisconnect(t *testing.T, tr Transport) {
	for _, p := range sim.Profiles {
		t.Run(string(p), func(t *testing.T) {
			srv, c := simCoordinator(t, tr, p)
			srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Match: isFencedScript})
			attempt, err := c.TryAcquire(ctxT(t), leaseKey, counterKey, time.Minute)
			if !errors.Is(err, lease.ErrOutcomeUnknown) || !errors.Is(err, conn.ErrOutcomeUnknown) || attempt.Acquired() {
				t.Fatalf("TryAcquire with a lost reply = %v, %v; want ErrOutcomeUnknown", attempt.Acquired(), err)
			}
			assertLeaseGoneAfterOneScript(t, srv, c)
		})
	}
}

// The caller gives up while the script's reply is held: no lock, ctx's
// cause, and the clean-up delete rides the script's own connection, behind
// the script.
func caseAcceptedAcquisitionIsNotReplayedAfterCancellation(t *testing.T, tr Transport) {
	srv, c := simCoordinator(t, tr, sim.Redis70)
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Match: isFencedScript, Gate: gate})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = srv.WaitFor(ctxT(t), func(e sim.Entry) bool { return isFencedScript(e.Args) })
		cancel()
	}()
	attempt, err := c.TryAcquire(ctx, leaseKey, counterKey, time.Minute)
	if !errors.Is(err, context.Canceled) || attempt.Acquired() {
		t.Fatalf("TryAcquire cancelled after the send = %v, %v; want canceled", attempt.Acquired(), err)
	}
	close(gate)
	script, _ := srv.WaitFor(ctxT(t), func(e sim.Entry) bool { return isFencedScript(e.Args) })
	cleanup, err := srv.WaitFor(ctxT(t), isRelease(leaseKey))
	if err != nil || cleanup.ClientID != script.ClientID {
		t.Fatalf("clean-up %v on connection %d, the script on %d: want it behind the script on its connection",
			err, cleanup.ClientID, script.ClientID)
	}
	assertLeaseGoneAfterOneScript(t, srv, c)
}

// lateCancel is a context that never signals Done but reports Canceled
// once cancelled: the caller "gives up" exactly when the test says, after
// the script's reply is on its way, without cutting the wait for it short.
type lateCancel struct {
	context.Context
	cancelled atomic.Bool
}

func (c *lateCancel) Err() error {
	if c.cancelled.Load() {
		return context.Canceled
	}
	return nil
}

func caseCancellationAfterASuccessfulReplyReleasesTheLease(t *testing.T, tr Transport) {
	for _, p := range sim.Profiles {
		t.Run(string(p), func(t *testing.T) {
			srv, c := simCoordinator(t, tr, p)
			gate := make(chan struct{})
			srv.Inject(sim.Fault{Kind: sim.DelayReply, Match: isFencedScript, Gate: gate})
			ctx := &lateCancel{Context: context.Background()}
			go func() {
				_, _ = srv.WaitFor(ctxT(t), func(e sim.Entry) bool { return isFencedScript(e.Args) })
				ctx.cancelled.Store(true) // the script ran; its successful reply is held
				close(gate)
			}()
			attempt, err := c.TryAcquire(ctx, leaseKey, counterKey, time.Minute)
			if !errors.Is(err, context.Canceled) || attempt.Acquired() {
				t.Fatalf("TryAcquire = %v, %v; want the ctx's cause", attempt.Acquired(), err)
			}
			if _, err := srv.WaitFor(ctxT(t), isRelease(leaseKey)); err != nil {
				t.Fatalf("no release of the unreturned lease: %v", err)
			}
			assertLeaseGoneAfterOneScript(t, srv, c)
		})
	}
}

// The script's reply comes after the lease could have expired: no lock,
// lease.ErrAcquiredTooLate, and the lease (still there: the server's clock
// stands still) is deleted.
func caseReplyAfterTheLeaseCouldHaveExpiredIsAcquiredTooLateAndCleanedUp(t *testing.T, tr Transport) {
	const ttl = 100 * time.Millisecond
	srv := simtest.Start(t, sim.Config{Profile: sim.Valkey90, Password: simPassword,
		Clock: sim.NewManualClock(time.Unix(1_700_000_000, 0))})
	srv.Exec("SCRIPT", "LOAD", conn.FencedAcquireScript)
	c := newCoordinator(t, tr, []string{srv.Addr()}, simPassword, "")
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Match: isFencedScript, Delay: 2 * ttl}) // real time: past the local lease
	attempt, err := c.TryAcquire(ctxT(t), leaseKey, counterKey, ttl)
	if !errors.Is(err, lease.ErrAcquiredTooLate) || attempt.Acquired() {
		t.Fatalf("TryAcquire = %v, %v; want ErrAcquiredTooLate", attempt.Acquired(), err)
	}
	assertLeaseGoneAfterOneScript(t, srv, c)
}

func caseMalformedReplyIsAProtocolErrorAndReleasesTheLease(t *testing.T, tr Transport) {
	for _, reply := range []string{"invalid", "0", "-1", "9223372036854775808"} {
		t.Run(reply, func(t *testing.T) {
			srv, c := simCoordinator(t, tr, sim.Redis84)
			srv.Inject(sim.Fault{Kind: sim.ReplaceReply, Match: isFencedScript,
				Reply: fmt.Sprintf("$%d\r\n%s\r\n", len(reply), reply)})
			attempt, err := c.TryAcquire(ctxT(t), leaseKey, counterKey, time.Minute)
			if !errors.Is(err, coordination.ErrMalformedFencingToken) || attempt.Acquired() {
				t.Fatalf("TryAcquire = %v, %v; want ErrMalformedFencingToken", attempt.Acquired(), err)
			}
			script, _ := srv.WaitFor(ctxT(t), func(e sim.Entry) bool { return isFencedScript(e.Args) })
			cleanup, err := srv.WaitFor(ctxT(t), isRelease(leaseKey))
			if err != nil || cleanup.Args[0] != "DELEX" || cleanup.ClientID != script.ClientID {
				t.Errorf("clean-up = %q on connection %d (%v); want the DELEX of the lease on the script's connection %d",
					cleanup.Args, cleanup.ClientID, err, script.ClientID)
			}
			assertLeaseGoneAfterOneScript(t, srv, c)
		})
	}
}

func caseValidationFailsBeforeAnythingIsSent(t *testing.T, tr Transport) {
	srv, c := simCoordinator(t, tr, sim.Valkey90)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name         string
		ctx          context.Context
		key, counter string
		ttl          time.Duration
		opts         []lease.AcquireOption
		want         error
	}{
		{"same keys", ctxT(t), "k", "k", time.Second, nil, coordination.ErrSameKeys},
		{"empty key", ctxT(t), "", "c", time.Second, nil, lease.ErrEmptyKey},
		{"empty counter", ctxT(t), "k", "", time.Second, nil, lease.ErrEmptyKey},
		{"zero ttl", ctxT(t), "k", "c", 0, nil, lease.ErrInvalidTTL},
		{"negative ttl", ctxT(t), "k", "c", -time.Millisecond, nil, lease.ErrInvalidTTL},
		{"ttl within the drift margin", ctxT(t), "k", "c", time.Millisecond, nil, lease.ErrInvalidTTL},
		{"cancelled ctx", cancelled, "k", "c", time.Second, nil, context.Canceled},
		{"negative wait", ctxT(t), "k", "c", time.Second, []lease.AcquireOption{lease.WithWait(-1)}, lease.ErrInvalidOption},
		{"zero retry", ctxT(t), "k", "c", time.Second, []lease.AcquireOption{lease.WithRetryEvery(0)}, lease.ErrInvalidOption},
		{"no replicas", ctxT(t), "k", "c", time.Second, []lease.AcquireOption{coordination.WithReplicas(0, time.Second)}, lease.ErrInvalidOption},
	}
	srv.ResetLog()
	for _, tt := range tests {
		attempt, err := c.TryAcquire(tt.ctx, tt.key, tt.counter, tt.ttl, tt.opts...)
		var opErr *coordination.OpError
		if !errors.Is(err, tt.want) || !errors.As(err, &opErr) || attempt.Acquired() {
			t.Errorf("%s: TryAcquire = %v, %v; want an *OpError matching %v", tt.name, attempt.Acquired(), err, tt.want)
		}
	}
	if log := srv.Log(); len(log) != 0 {
		t.Fatalf("commands sent by invalid calls: %v", log)
	}
}

func caseSubMillisecondDurationsRoundUp(t *testing.T, tr Transport) {
	_, c := simCoordinator(t, tr, sim.Valkey90)
	lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute+time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if got, want := lock.Duration(), time.Minute+time.Millisecond; got != want {
		t.Fatalf("Duration() = %v; want %v", got, want)
	}
	if est := lock.RemainingEstimate(); est <= 0 || est > lock.Duration() {
		t.Fatalf("RemainingEstimate() = %v; want in (0, %v]", est, lock.Duration())
	}
}

func caseWaitingAcquirePollsWithAFreshTokenUntilReleased(t *testing.T, tr Transport) {
	srv, c := simCoordinator(t, tr, sim.Redis70)
	holder, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("Acquire while held = %v; want ErrNotAcquired", err)
	}
	srv.ResetLog()
	go func() { // release once the waiter has tried twice
		seen := 0
		_, _ = srv.WaitFor(ctxT(t), func(e sim.Entry) bool {
			if isFencedScript(e.Args) {
				seen++
			}
			return seen == 2
		})
		_, _ = holder.Release(ctxT(t))
	}()
	waiter, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute, lease.WithWait(10*time.Second), lease.WithRetryEvery(time.Millisecond))
	if err != nil || waiter.FencingToken() != 2 {
		t.Fatalf("waiting Acquire = %v, %v; want token 2", waiter, err)
	}
	defer waiter.Close()
	owners := map[string]bool{}
	for _, e := range srv.Log() {
		if isFencedScript(e.Args) {
			owners[e.Args[5]] = true
		}
	}
	if tries := fencedScripts(srv.Log()); tries < 3 || len(owners) != tries {
		t.Fatalf("%d tries with %d distinct owner tokens; want >= 3, a fresh token each", tries, len(owners))
	}
}

func caseCrossSlotPairIsRefusedInClusterModeAndHashTagsWork(t *testing.T, tr Transport) {
	cluster := simtest.StartCluster(t, sim.ClusterConfig{
		Profiles: []sim.Profile{sim.Redis70, sim.Valkey90}, Password: simPassword})
	c := newCoordinator(t, tr, cluster.Addrs(), simPassword, "")
	if sim.Slot("invoice:42:lease") == sim.Slot("invoice:42:fence") {
		t.Fatal("test keys must hash to different slots")
	}
	if _, err := c.TryAcquire(ctxT(t), "invoice:42:lease", "invoice:42:fence", time.Minute); !errors.Is(err, conn.ErrCrossSlot) ||
		!errors.Is(err, lease.ErrCrossSlot) || !errors.Is(err, lease.ErrNotSubmitted) {
		t.Fatalf("cross-slot TryAcquire = %v; want ErrCrossSlot", err)
	}
	for i := range 2 {
		if n := fencedScripts(cluster.Node(i).Log()); n != 0 {
			t.Fatalf("node %d ran %d fenced scripts for a cross-slot pair", i, n)
		}
	}
	lock, err := c.Acquire(ctxT(t), "{invoice:42}:lease", "{invoice:42}:fence", time.Minute)
	if err != nil || lock.FencingToken() != 1 {
		t.Fatalf("hash-tagged Acquire = %v, %v; want token 1", lock, err)
	}
	if ok, err := lock.ResetExpiry(ctxT(t), time.Minute); !ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v", ok, err)
	}
	if out, err := lock.Release(ctxT(t)); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
}

// On a real redis-server 7.0 cluster, hash-tagged pairs spread over the
// masters get their tokens from their own slot's counter, and a cross-slot
// pair is refused before anything is sent.
func caseRealClusterHashTaggedPairsAcquireAndCrossSlotIsRefused(t *testing.T, tr Transport) {
	list := os.Getenv("RESPIRE_REAL_CLUSTER70")
	if list == "" {
		t.Skip("RESPIRE_REAL_CLUSTER70 not set: no real redis-server 7.0 cluster (the Makefile starts one)")
	}
	realserver.Lock(t, list)
	c := newCoordinator(t, tr, strings.Split(list, ","), os.Getenv("RESPIRE_REAL_CLUSTER70_PASSWORD"),
		fmt.Sprintf("coordination-realcluster:%d:", time.Now().UnixNano()))
	if _, err := c.TryAcquire(ctxT(t), "a:lease", "b:fence", time.Minute); !errors.Is(err, conn.ErrCrossSlot) {
		t.Fatalf("cross-slot TryAcquire = %v; want ErrCrossSlot", err)
	}
	for i := range 12 {
		key, fence := fmt.Sprintf("{invoice:%d}:lease", i), fmt.Sprintf("{invoice:%d}:fence", i)
		for want := int64(1); want <= 2; want++ {
			lock, err := c.Acquire(ctxT(t), key, fence, time.Minute)
			if err != nil || lock.FencingToken() != want {
				t.Fatalf("Acquire(%s) = %v, %v; want token %d", key, lock, err, want)
			}
			if ok, err := lock.ResetExpiry(ctxT(t), time.Minute); !ok || err != nil {
				t.Fatalf("ResetExpiry(%s) = %v, %v", key, ok, err)
			}
			if out, err := lock.Release(ctxT(t)); out != lease.Released || err != nil {
				t.Fatalf("Release(%s) = %v, %v", key, out, err)
			}
		}
	}
}

func init() {
	register(
		Case{"AcceptedAcquisitionIsNotReplayedAfterDisconnect", caseAcceptedAcquisitionIsNotReplayedAfterDisconnect},
		Case{"AcceptedAcquisitionIsNotReplayedAfterCancellation", caseAcceptedAcquisitionIsNotReplayedAfterCancellation},
		Case{"CancellationAfterASuccessfulReplyReleasesTheLease", caseCancellationAfterASuccessfulReplyReleasesTheLease},
		Case{"ReplyAfterTheLeaseCouldHaveExpiredIsAcquiredTooLateAndCleanedUp", caseReplyAfterTheLeaseCouldHaveExpiredIsAcquiredTooLateAndCleanedUp},
		Case{"MalformedReplyIsAProtocolErrorAndReleasesTheLease", caseMalformedReplyIsAProtocolErrorAndReleasesTheLease},
		Case{"ValidationFailsBeforeAnythingIsSent", caseValidationFailsBeforeAnythingIsSent},
		Case{"SubMillisecondDurationsRoundUp", caseSubMillisecondDurationsRoundUp},
		Case{"WaitingAcquirePollsWithAFreshTokenUntilReleased", caseWaitingAcquirePollsWithAFreshTokenUntilReleased},
		Case{"CrossSlotPairIsRefusedInClusterModeAndHashTagsWork", caseCrossSlotPairIsRefusedInClusterModeAndHashTagsWork},
		Case{"RealClusterHashTaggedPairsAcquireAndCrossSlotIsRefused", caseRealClusterHashTaggedPairsAcquireAndCrossSlotIsRefused},
	)
}
