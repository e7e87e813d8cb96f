package dst

import (
	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
)

// fence executes EffFence: CLIENT KILL ID <id> ADDR <addr> of the
// connection that carried op's last command, sent on the process's control
// connection. Once it answers, nothing still queued on the killed
// connection can run (checked by invariant 5).
func (w *world) fence(h *handle, opID int64) {
	op := h.ops[opID]
	p := h.proc
	report := func(res OpResult) {
		w.schedule(p, w.now, func() { w.input(h, Input{Kind: InFenceDone, Op: opID, Result: res}) })
	}
	switch {
	case op == nil || !op.written:
		report(OpResult{Class: Definite})
		return
	case op.sess == nil || op.noIdent:
		w.trace.logf(w, p, h.name, "fence of op %s skipped: no identity", opLabel(opID))
		report(OpResult{Class: Definite, NoIdentity: true, Err: "no identity to fence"})
		return
	case w.opt.Mutation == MutationSkipFence:
		// the broken variant claims the fence was answered without sending it
		if op.wrote.generation == op.wrote.node.generation {
			w.check.onFenced(w, op.wrote)
		}
		report(OpResult{Class: Definite})
		return
	}
	victim := op.wrote // the connection that carried the last written command
	c := w.liveConn(p, &p.control, victim.node, "control")
	cmd := conn.FenceCommand(op.clientID, op.addr)
	w.trace.logf(w, p, h.name, "fence id=%d of op %s", op.clientID, opLabel(opID))
	w.write(c, &request{cmd: cmd,
		onLost: func(error) { report(OpResult{Class: Uncertain, Err: "fence connection lost"}) },
		onReply: func(r conn.Reply) {
			if r.Kind == conn.ReplyError {
				report(OpResult{Class: Definite, Err: r.Text})
				return
			}
			if victim.generation == victim.node.generation {
				w.check.onFenced(w, victim)
			}
			w.stats.Fences++
			w.reapKilled()
			w.abandon(victim)
			report(OpResult{Class: Definite})
		}})
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

// abandon closes c from the client side, as rueidis' Close does when its
// drain gives up: the process stops waiting for its replies (each
// unanswered request fails with rueidis.ErrClosing), but commands already
// written still reach the server and run; the server drops the connection
// once they have.
func (w *world) abandon(c *connection) {
	if c.closed || c.abandoned {
		return
	}
	c.abandoned = true
	lost := c.inFlight
	c.inFlight = nil
	for _, r := range lost {
		w.schedule(c.proc, w.now, func() {
			if !r.settled {
				r.settled = true
				r.onLost(rueidis.ErrClosing)
			}
		})
	}
	if len(c.toServer) == 0 || c.serverGone {
		w.closeConn(c, rueidis.ErrClosing)
	}
}

// fenceConn fences connection victim of session s (CLIENT KILL on p's
// control connection) and then calls next with whether the kill answered.
func (w *world) fenceConn(p *process, victim *connection, s *session, next func(ok bool)) {
	if victim.closed && !victim.abandoned {
		next(true) // closed on both sides: nothing of it can run
		return
	}
	c := w.liveConn(p, &p.control, victim.node, "control")
	w.trace.logf(w, p, "", "fence id=%d before a clean-up", s.id)
	w.write(c, &request{cmd: conn.FenceCommand(s.id, s.addr),
		onLost: func(error) { w.schedule(p, w.now, func() { next(false) }) },
		onReply: func(r conn.Reply) {
			ok := r.Kind != conn.ReplyError
			if ok && victim.generation == victim.node.generation {
				w.check.onFenced(w, victim)
				w.reapKilled()
				w.abandon(victim)
			}
			w.schedule(p, w.now, func() { next(ok) })
		}})
}
