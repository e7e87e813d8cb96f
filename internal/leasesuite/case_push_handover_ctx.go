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
			const key = "push:handover:ctx"
			srv := startSim(t, sim.Config{Profile: profile, History: true})
			locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, true))
			ctx := ctxT(t)
			holder, err := locks.Acquire(ctx, key, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			waitCtx, giveUp := context.WithCancel(context.Background())
			defer giveUp()
			got := make(chan error, 1)
			go func() {
				lock, err := locks.Acquire(waitCtx, key, 30*time.Second, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
				if lock != nil {
					lock.Close()
					err = errors.New("the waiter returned the lock after its ctx ended")
				}
				got <- err
			}()
			eventually(t, "the waiter parked", func() bool { return parkedWaiters(locks, key) == 1 })
			srv.Exec("SCRIPT", "LOAD", conn.HandOverScript) // the EVALSHA runs: its reply is the one held
			reply, open := gate(t)
			srv.Inject(sim.Fault{Kind: sim.DelayReply, Gate: reply, Match: isHandOver})
			released := make(chan lease.ReleaseOutcome, 1)
			go func() { out, _ := holder.Release(context.Background()); released <- out }()
			ran := waitHistory(t, srv, func(e sim.Execution) bool { return isHandOver(e.Args) && !strings.HasPrefix(e.Reply, "-") })
			if !strings.HasPrefix(ran.Reply, ":1") {
				t.Fatalf("the hand-over answered %q; want :1 (released and handed over)", ran.Reply)
			}
			giveUp()
			select {
			case err := <-got:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("the waiter's Acquire: %v; want context.Canceled", err)
				}
			case <-time.After(30 * time.Second): // a failure bound, not a margin: the answer is held until open
				open()
				t.Fatalf("the waiter's Acquire did not return at its ctx's end: it waited for the hand-over's reply (%v)", <-got)
			}
			open()
			if out := <-released; out != lease.Released {
				t.Fatalf("the holder's release: %v; want Released", out)
			}
			eventually(t, "the abandoned try's key deleted", func() bool { return strings.HasPrefix(srv.Exec("EXISTS", key), ":0") })
			again, err := locks.Acquire(ctx, key, 30*time.Second, lease.WithWaitUntilDone())
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
