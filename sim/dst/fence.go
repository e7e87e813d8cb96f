package dst

import (
	"context"
	"strings"

	"github.com/respire-go/respire/conn"
)

// fenceAttempts bounds how often one fence is sent when the connection it
// travels on fails, as conn's (CLIENT KILL ID is idempotent).
const fenceAttempts = 3

// fenceCall is one CLIENT KILL of a session in flight or answered.
type fenceCall struct {
	done chan struct{}
	err  error
}

// errForeignSession: a session another transport made.
var errForeignSession = conn.ErrForeignSession

// Fence implements conn.Transport as conn.Pool.Fence does: s is retired,
// then killed with CLIENT KILL ID <id> ADDR <addr> sent on the process's
// control connection to s's node; once the kill is answered nothing s
// carried can run (checked by invariant 5). Fences of one session are
// shared; a failed fence connection is replaced (fenceAttempts in all); a
// caller whose ctx ends first gets an Uncertain error while the fence goes
// on for the others. Without identity: conn.ErrNoIdentity, NotSubmitted.
// MutationSkipFence answers without sending anything.
func (t *simTransport) Fence(ctx context.Context, cs conn.Session) error {
	s, ok := cs.(*simSession)
	if !ok || s == nil || s.t != t {
		return &conn.Error{Class: conn.NotSubmitted, Op: "fence", Err: errForeignSession}
	}
	if !s.hasIdentity {
		t.retire(s)
		return &conn.Error{Class: conn.NotSubmitted, Op: "fence", Addr: s.node.addr, Session: s, Err: conn.ErrNoIdentity}
	}
	for {
		call, leader := s.joinFence()
		if leader {
			call.err = t.sendFence(ctx, s)
			s.fenceAnswered = s.fenceAnswered || call.err == nil
			close(call.done)
			return call.err
		}
		if err := t.p.spawn.Wait(ctx, call.done); err != nil {
			return &conn.Error{Class: conn.Uncertain, Op: "fence", Addr: s.node.addr, Session: s, Err: err}
		}
		if call.err == nil || ctx.Err() != nil {
			return call.err
		}
		// the shared fence failed; ours may still succeed
	}
}

// joinFence returns the fence call to wait for, or a new one the caller
// must send (leader).
func (s *simSession) joinFence() (call *fenceCall, leader bool) {
	if f := s.fence; f != nil {
		select {
		case <-f.done:
			if f.err == nil {
				return f, false
			}
		default:
			return f, false
		}
	}
	s.fence = &fenceCall{done: make(chan struct{})}
	return s.fence, true
}

// sendFence sends the kill, again on a fresh control connection after a
// transport failure while ctx lasts.
func (t *simTransport) sendFence(ctx context.Context, s *simSession) error {
	w := t.w
	t.retire(s) // nothing new is handed to s from now on
	victim := s.conn
	if w.opt.Mutation == MutationSkipFence {
		// the broken variant claims the fence was answered without sending it
		w.check.onFenced(w, victim)
		return nil
	}
	var err error
	for attempt := 0; attempt < fenceAttempts; attempt++ {
		if e := ctx.Err(); e != nil {
			return &conn.Error{Class: conn.NotSubmitted, Op: "fence", Addr: s.node.addr, Session: s, Err: context.Cause(ctx)}
		}
		c := t.controlConn(s.node)
		w.trace.logf(w, t.p, "", "fence id=%d on %s", s.identity.ID, s.node.name)
		x := t.sendOn(c, conn.FenceCommand(s.identity.ID, s.identity.Addr))
		if werr := t.p.spawn.Wait(ctx, x.done); werr != nil {
			x.over = true
			err = &conn.Error{Class: conn.Uncertain, Op: "fence", Addr: s.node.addr, Session: s, Err: werr}
			continue
		}
		if x.lost != nil {
			err = &conn.Error{Class: classifyTransport(x.lost), Op: "fence", Addr: s.node.addr, Session: s, Err: x.lost}
			continue
		}
		if r := x.replies[0]; r.Kind == conn.ReplyError {
			code, _, _ := strings.Cut(r.Text, " ")
			return &conn.Error{Class: conn.Definite, Op: "fence", Addr: s.node.addr, Session: s, Code: code,
				Err: &conn.ServerError{Code: code, Message: r.Text}}
		}
		w.stats.Fences++
		t.fenced(victim)
		return nil
	}
	return err
}

// fenced applies an answered kill of victim: the checker holds that
// nothing of it runs from now on (invariant 5), the server's killed
// connections are closed on its side, and the process stops waiting for
// victim's replies (rueidis' Close of a killed socket: ErrClosing).
func (t *simTransport) fenced(victim *connection) {
	w := t.w
	if victim.generation == victim.node.generation {
		w.check.onFenced(w, victim)
	}
	w.reapKilled()
	w.abandon(victim)
}

// controlConn returns a usable control connection to n, the ordinary
// client's connection that fences travel on.
func (t *simTransport) controlConn(n *node) *connection {
	t.grow(n)
	if c := t.control[n.index]; c.stale() {
		t.control[n.index] = t.w.open(t.p, n, "control")
	}
	return t.control[n.index]
}

// sendOn writes one command that belongs to no lock operation on c.
func (t *simTransport) sendOn(c *connection, cmd conn.Command) *pending {
	x := &pending{replies: make([]conn.Reply, 1), done: make(chan struct{})}
	t.w.write(c, &request{cmd: cmd,
		onReply: func(r conn.Reply) {
			x.replies[0] = r
			x.finish()
		},
		onLost: func(err error) {
			if !x.over {
				x.lost = err
				x.finish()
			}
		}})
	return x
}

// reapKilled marks every connection the server killed as closed by the
// server (the process notices it a little later).
func (w *world) reapKilled() {
	for _, c := range w.conns {
		if !c.closed && c.generation == c.node.generation && c.node.engine.Killed(c.clientID) {
			w.serverClose(c)
		}
	}
}
