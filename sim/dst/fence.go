package dst

import "github.com/respire-go/respire/conn"

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
		onLost: func() { report(OpResult{Class: Uncertain, Err: "fence connection lost"}) },
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

// reapKilled closes, on the client side, every connection the server
// killed (the process sees EOF).
func (w *world) reapKilled() {
	for _, c := range w.conns {
		if !c.closed && c.generation == c.node.generation && c.node.engine.Killed(c.clientID) {
			w.closeConn(c)
		}
	}
}

// abandon closes c from the client side: the process stops waiting for
// its replies (each unanswered request is lost), but commands already
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
				r.onLost()
			}
		})
	}
	if len(c.toServer) == 0 {
		w.closeConn(c)
	}
}
