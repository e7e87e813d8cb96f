package leasesuite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// heldHandOver is a hand-over whose reply the sim server holds: a holder's
// release carried the try of a waiter of the same Locks, and the script
// ran and gave the waiter the key (reply 1), which open lets through.
// giveUp ends the waiter's ctx; got has its Acquire's error (a lock it
// returned is closed and reported as an error), released the release's
// outcome.
type heldHandOver struct {
	srv      *sim.Server
	locks    *lease.Locks
	key      string
	giveUp   context.CancelFunc
	open     func()
	got      chan error
	released chan lease.ReleaseOutcome
}

// holdHandOver sets up a heldHandOver of key on a sim server of profile.
func holdHandOver(t *testing.T, tr Transport, profile sim.Profile, key string) *heldHandOver {
	t.Helper()
	srv := startSim(t, sim.Config{Profile: profile, History: true})
	h := &heldHandOver{srv: srv, key: key, got: make(chan error, 1), released: make(chan lease.ReleaseOutcome, 1)}
	h.locks = newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
	holder, err := h.locks.Acquire(ctxT(t), key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, giveUp := context.WithCancel(context.Background())
	t.Cleanup(giveUp)
	h.giveUp = giveUp
	go func() {
		lock, err := h.locks.Acquire(waitCtx, key, 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
		if lock != nil {
			lock.Close()
			err = errors.New("the waiter returned the lock after its ctx ended")
		}
		h.got <- err
	}()
	eventually(t, "the waiter parked", func() bool { return parkedWaiters(h.locks, key) == 1 })
	srv.Exec("SCRIPT", "LOAD", conn.HandOverScript) // the EVALSHA runs: its reply is the one held
	reply, open := gate(t)
	h.open = open
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Gate: reply, Match: isHandOver})
	go func() { out, _ := holder.Release(context.Background()); h.released <- out }()
	ran := waitHistory(t, srv, func(e sim.Execution) bool { return isHandOver(e.Args) && !strings.HasPrefix(e.Reply, "-") })
	if !strings.HasPrefix(ran.Reply, ":1") {
		t.Fatalf("the hand-over answered %q; want :1 (released and handed over)", ran.Reply)
	}
	return h
}

// TestPushHandsOverWithinOneLocks_AWaiterReturnsAtItsCtxEndWhileTheHandOverIsAnswered:
// a release carries a parked waiter's try and the server holds the
// hand-over's reply (the releaser's ctx has no deadline); the waiter's ctx
// ends: its Acquire returns the ctx's cause at once, as it does while its
// own SET NX is on the wire ("ctx interrupts the reply wait"), not when
// the reply comes. When the reply comes the release answers Released, the
// key the script gave the abandoned try is deleted, and the key can be
// taken again by a waiter of the same Locks (nothing of the hand-over is
// left behind: no reservation, no baton). Without the fix the Acquire
// returned only with the reply.
func casePushHandsOverWithinOneLocks_AWaiterReturnsAtItsCtxEndWhileTheHandOverIsAnswered(t *testing.T, tr Transport) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			h := holdHandOver(t, tr, profile, "push:handover:ctx")
			h.giveUp()
			select {
			case err := <-h.got:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("the waiter's Acquire: %v; want context.Canceled", err)
				}
			case <-time.After(30 * time.Second): // a failure bound, not a margin: the answer is held until open
				h.open()
				t.Fatalf("the waiter's Acquire did not return at its ctx's end: it waited for the hand-over's reply (%v)", <-h.got)
			}
			h.open()
			if out := <-h.released; out != lease.Released {
				t.Fatalf("the holder's release: %v; want Released", out)
			}
			eventually(t, "the abandoned try's key deleted", func() bool { return strings.HasPrefix(h.srv.Exec("EXISTS", h.key), ":0") })
			ctx := ctxT(t)
			again, err := h.locks.Acquire(ctx, h.key, 30*time.Second, lease.WithWaitUntilDone())
			if err != nil {
				t.Fatalf("the key after the abandoned hand-over: %v", err)
			}
			if out, err := again.Release(ctx); out != lease.Released || err != nil {
				t.Fatalf("its release: %v, %v", out, err)
			}
		})
	}
}

func init() {
	register(
		Case{"PushHandsOverWithinOneLocks_AWaiterReturnsAtItsCtxEndWhileTheHandOverIsAnswered", casePushHandsOverWithinOneLocks_AWaiterReturnsAtItsCtxEndWhileTheHandOverIsAnswered},
	)
}
