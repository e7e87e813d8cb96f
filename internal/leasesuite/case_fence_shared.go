package leasesuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// These cases hold what a fence does to the commands of other locks that
// rode the fenced connection with the command that made it uncertain. Such
// commands share a connection's wire in flight on every transport, but not
// in the same way: rueidis pipelines every command of a node on one
// connection at once, while a go-redis session writes one pipeline at a
// time and sends what arrived meanwhile together in the next. holdReplies
// puts them on one connection's wire on both: behind a first command whose
// reply is held, then let through alone.

// TestUncertainLocalClose_AnotherLocksFenceCutsOffAnAcquisition: one lock's
// fence retires the session an acquisition of another lock rides: its SET
// is on the fenced connection's wire with the other lock's uncertain reset.
// The SET is never sent twice, TryAcquire reports the unknown outcome, and
// the abandoned lease is cleaned up after the fence.
func caseUncertainLocalClose_AnotherLocksFenceCutsOffAnAcquisition(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := f.locks(t, lease.WithIdleCheck(lease.MaxTTL)) // no PING before the held commands
		ctx := ctxT(t)
		other, err := locks.Acquire(ctx, "other", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		hold := f.holdReplies(t, locks, f.sessionConn(t, other))
		resetCtx, cancelReset := context.WithCancel(ctx)
		resetDone := make(chan error, 1)
		go func() { _, err := other.ResetExpiry(resetCtx, time.Minute); resetDone <- err }()
		type outcome struct {
			a   lease.Attempt
			err error
		}
		acquired := make(chan outcome, 1)
		go func() { a, err := locks.TryAcquire(ctx, "k", time.Minute); acquired <- outcome{a, err} }()
		hold.release(t, locks, isRenewal("other"), isCommand("SET", "k")) // on the wire together, their replies held
		waitEntry(t, f.srv, isRenewal("other"))
		waitEntry(t, f.srv, isCommand("SET", "k"))
		cancelReset() // the reset is uncertain: its session is fenced, the SET's reply never comes
		<-resetDone
		got := <-acquired
		if got.a.Acquired() || !errors.Is(got.err, conn.ErrOutcomeUnknown) {
			t.Fatalf("TryAcquire cut off by another lock's fence = %v, %v; want not acquired, outcome unknown", got.a.Acquired(), got.err)
		}
		if n := countArgs(f.srv.Log(), "SET", "k", "NX"); n != 1 {
			t.Fatalf("%d SET NX of the key; want 1 (an uncertain acquisition is never re-sent)", n)
		}
		f.proxy.UnstallAll(faultproxy.Both)
		eventually(t, "the abandoned lease cleaned up", func() bool { return f.srv.Exec("EXISTS", "k") == ":0\r\n" })
	})
}

// TestSurvivesConnectionReset_AnotherLocksFenceDoesNotLoseLocksOnItsSession:
// keep-alive renewals of many locks are in flight on one session when
// another lock's uncertain reset, on the wire with them, has that session
// fenced. Every one of them recovers on a fresh session; none is lost.
func caseSurvivesConnectionReset_AnotherLocksFenceDoesNotLoseLocksOnItsSession(t *testing.T, tr Transport) {
	const held = 20
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := f.locks(t, lease.WithIdleCheck(lease.MaxTTL)) // no PING before the held commands
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		ctx := ctxT(t)
		var keep []*lease.Lock
		for i := range held {
			lock, err := locks.Acquire(ctx, fmt.Sprintf("k%d", i), 10*time.Second, lease.WithKeepAlive())
			if err != nil {
				t.Fatal(err)
			}
			keep = append(keep, lock)
		}
		culprit, err := locks.Acquire(ctx, "culprit", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		hold := f.holdReplies(t, locks, f.sessionConn(t, culprit))
		// Every keep-alive renews (due 4.898s in); the replies are held (4
		// batches on the wire, the rest queued). Not a full 5s: that would also
		// end the push reads started at the acquisitions (bounded by 5s on the
		// same clock), and a watcher given up makes the session PING first.
		clock.Advance(4950 * time.Millisecond)
		resetCtx, cancel := context.WithCancel(ctx)
		resetDone := make(chan struct{})
		go func() { _, _ = culprit.ResetExpiry(resetCtx, time.Minute); close(resetDone) }()
		renewalOfK := func(e sim.Entry) bool { return hasIFEQ(e.Args) && strings.HasPrefix(e.Args[1], "k") }
		hold.release(t, locks, renewalOfK, isRenewal("culprit")) // on the wire together, their replies held
		waitEntry(t, f.srv, renewalOfK)
		waitEntry(t, f.srv, isRenewal("culprit"))
		before := kills(f.target)
		cancel() // uncertain: the shared session is fenced under the keep-alive renewals
		<-resetDone
		for i, lock := range keep {
			eventually(t, fmt.Sprintf("lock %d recovered", i), func() bool {
				return lock.State() == lease.StateHeld && lock.RemainingEstimate() > estimateOf(10*time.Second)-time.Second
			})
			if err := lock.Context().Err(); err != nil {
				t.Fatalf("lock %d lost: %v", i, context.Cause(lock.Context()))
			}
		}
		waitFenced(t, f.target, before)
		if culprit.State() == lease.StateHeld {
			t.Fatal("the culprit's uncertain reset left it Held")
		}
	})
}

// replyHold holds the replies of a session's connection from a point on
// (see holdReplies).
type replyHold struct {
	f     *faulty
	c     *faultproxy.Conn
	first int // the bytes of the first command's reply
	done  chan error
}

// holdReplies stalls the replies of the session connection c and sends a
// first command on it, a TryAcquire of "blocker", whose reply it waits to
// hold. Commands sent after it go on c's wire behind it (the root module's
// own client), or wait for c until its reply is read (the adapters' session
// drainers); release lets that reply alone through.
func (f *faulty) holdReplies(t *testing.T, locks *lease.Locks, c *faultproxy.Conn) *replyHold {
	t.Helper()
	c.Stall(faultproxy.ToClient)
	done := make(chan error, 1)
	go func() { _, err := locks.TryAcquire(ctxT(t), "blocker", time.Minute); done <- err }()
	waitEntry(t, f.srv, isCommand("SET", "blocker"))
	if err := c.WaitBuffered(ctxT(t), faultproxy.ToClient, 1); err != nil {
		t.Fatalf("the first command's reply never reached the proxy: %v", err)
	}
	return &replyHold{f: f, c: c, first: c.Buffered(faultproxy.ToClient), done: done}
}

// release lets the first command's reply through once each of want
// matches a command sent since (on a transport that queues them,
// Transport.Queued, a command queued): the next pipeline then carries them
// together, and every reply after the first one stays held. Commands
// queued after that pipeline was written wait for the one after it.
func (h *replyHold) release(t *testing.T, locks *lease.Locks, want ...func(sim.Entry) bool) {
	t.Helper()
	if queued := h.f.tr.Queued; queued != nil {
		eventually(t, "the commands queued behind the first", func() bool {
			cmds := queued(locks)
			for _, match := range want {
				if !slices.ContainsFunc(cmds, func(args []string) bool { return match(sim.Entry{Args: args}) }) {
					return false
				}
			}
			return true
		})
	}
	h.c.Release(faultproxy.ToClient, h.first)
	if err := <-h.done; err != nil {
		t.Fatalf("the first command: %v", err)
	}
}

func init() {
	register(
		Case{"UncertainLocalClose_AnotherLocksFenceCutsOffAnAcquisition", caseUncertainLocalClose_AnotherLocksFenceCutsOffAnAcquisition},
		Case{"SurvivesConnectionReset_AnotherLocksFenceDoesNotLoseLocksOnItsSession", caseSurvivesConnectionReset_AnotherLocksFenceDoesNotLoseLocksOnItsSession},
	)
}
