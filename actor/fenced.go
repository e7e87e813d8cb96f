package actor

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file is the acquisition of package coordination's fencing-token
// locks: the same handle, driver and keep-alive as any lease lock, with
// conn's fenced script (lease key + persistent counter) as the acquisition
// command instead of SET NX PX, optionally followed by WAIT.

// Fenced is one fencing-token acquisition: the counter's wire key, the
// WAIT asked for (Replicas 0: none), and, in Reply, what its last try
// learned. It belongs to one Acquire call.
type Fenced struct {
	CounterKey string
	Replicas   int
	Timeout    time.Duration // whole milliseconds
	Reply      FencedReply
}

// FencedReply is what a fenced acquisition learned besides the lock.
type FencedReply struct {
	// FencingToken is the token the script handed out with the lock.
	FencingToken int64
	// Acknowledged is WAIT's count when WaitErr is nil.
	Acknowledged int64
	// WaitErr is why WAIT gave no count (a conn *Error), or nil.
	WaitErr error
	// NotReplicated: the script took the lease but WAIT did not confirm it
	// (see Fenced.Unconfirmed), so Acquire returned no Lock: the handle was
	// ended there — its keep-alive stopped, then the lease released — and
	// nothing renews the lease any more.
	NotReplicated bool
	// Released, with NotReplicated: that release deleted the lease. When
	// false a lease still on the server expires with its TTL.
	Released bool
	replicas int // the WAIT asked for (Fenced.Replicas), for Unconfirmed
}

// Unconfirmed reports whether WAIT was asked for and did not confirm the
// script's write: it failed, or counted fewer than the replicas asked for.
func (r FencedReply) Unconfirmed() bool {
	return r.replicas > 0 && (r.WaitErr != nil || r.Acknowledged < int64(r.replicas))
}

// ErrNotReplicated is Acquire's answer to a fenced acquisition that took the
// lease but whose WAIT did not confirm it: the handle was ended and is not
// returned (Fenced.Reply says how).
var ErrNotReplicated = errors.New("lease: fencing counter increment not acknowledged by enough replicas")

// unreturnedReleaseTimeout bounds the release of a handle that is never
// returned (endUnreturned).
const unreturnedReleaseTimeout = 5 * time.Second

// endUnreturned ends a handle that its caller never receives (rule
// UnreturnedHandleEnds): like Close, it stops the keep-alive (an owned one
// included) and then releases the lease, bounded by
// unreturnedReleaseTimeout and whatever ctx's state. Whatever the release's
// outcome — released, refused (NOREPLICAS, NOPERM…), not sent, unknown
// (fenced) — nothing renews the lease afterwards, and a handle still
// counting itself held watches its deadline, so that it ends (and leaves
// the push hub) when its lease estimate runs out instead of staying
// registered for ever. It reports whether the release deleted the lease.
// It blocks for the release.
func (l *Lock) endUnreturned(ctx context.Context) (released bool) {
	ctx, cancel := l.d.bound(context.WithoutCancel(ctx), unreturnedReleaseTimeout)
	defer cancel()
	res, err := l.Request(ctx, sm.Input{Kind: sm.InputClose})
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.d.clock.Now()
	if l.h.KeepAliveActive() { // the bound ended before Close could stop it
		l.step(sm.Input{Kind: sm.InputKeepAliveStop, Now: now}, 0)
	}
	if !l.ended() {
		l.step(sm.Input{Kind: sm.InputWatch, Now: now}, 0)
		l.observeLocked()
	}
	return err == nil && res.Err == nil && res.Release == sm.ReleaseReleased
}

// send runs one try of the fenced acquisition: the script on the lease
// key's session (like SET NX PX), or, with Replicas, the script and WAIT
// pipelined on a dedicated connection of their own (WAIT blocks its socket,
// and must follow the script on the script's connection). That connection
// is no session: nothing records it in route, so the clean-up of an
// abandoned try reads and deletes on a fresh session, best effort (the
// dedicated socket was closed, not fenced).
func (f *Fenced) send(ctx context.Context, d *Driver, wireKey, token string, ms int64,
	route *conn.Route) (conn.Result, error) {
	f.Reply = FencedReply{replicas: f.Replicas}
	if f.Replicas == 0 {
		res, err := d.acquireOn(ctx, wireKey, conn.FencedAcquireOp(wireKey, f.CounterKey, token, ms), route)
		f.Reply.FencingToken = res.FencingToken
		return res, err
	}
	if err := d.closedErr(); err != nil {
		return conn.Result{}, err
	}
	res, err := d.transport.AcquireReplicated(ctx, d.stop, wireKey, f.CounterKey, token, ms,
		int64(f.Replicas), f.Timeout.Milliseconds())
	if err != nil && conn.ClassOf(err) == conn.NotSubmitted && errors.Is(err, conn.ErrWaitStopped) {
		err = d.closedErr() // Shutdown began before the pipeline left: closed
	}
	if err == nil && res.Acquired && errors.Is(res.WaitErr, conn.ErrWaitStopped) {
		// Shutdown cut the WAIT after the script took the lease: no handle
		// is returned, and the lease goes to the clean-up of an abandoned
		// try (which Shutdown waits for), as after a lost reply.
		err = &conn.Error{Class: conn.Uncertain, Op: "fenced-acquire", Err: res.WaitErr}
	}
	f.Reply.FencingToken, f.Reply.Acknowledged, f.Reply.WaitErr = res.FencingToken, res.Acknowledged, res.WaitErr
	return conn.Result{Owned: res.Acquired, FencingToken: res.FencingToken}, err
}
