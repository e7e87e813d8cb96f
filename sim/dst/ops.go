package dst

import (
	"errors"
	"io"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
)

// opRun is one operation a core started: the runtime's transport half. It
// drives conn's pure protocol (conn.Operation) over the simulated wire and
// classifies the end: a reply is Definite, a command never written is
// NotSubmitted, anything lost after the write is Uncertain.
type opRun struct {
	id        int64
	h         *handle
	kind      OpKind
	ttl       time.Duration
	fenced    bool
	sess      *session // extend, release, verify
	carrier   *connection
	wrote     *connection // the connection that carried the last written command
	clientID  int64       // its identity: CLIENT ID ...
	addr      string      // ... and addr= (CLIENT INFO)
	protocol  *conn.Operation
	script    *conn.FencedAcquire // a fenced handle's acquisition
	scriptRun int64               // the fenced script run that handed out its token
	written   bool
	done      bool
	noIdent   bool
	gate      *event // a delayed write (waiting for in-flight capacity)
	deadline  *event
	sent      int  // commands written (checker: fallbacks)
	replied   bool // the last command got a reply
	confirmed bool // ... and it was a confirming fallback reply
	uncertain bool
	// the core decided this op after it had learned that its acquisition
	// was uncertain, or while earlier uncertain writes of the handle may
	// still run (invariant 3: those must be sealed before this op writes)
	afterUncertainSet bool
	mustSeal          []*connection
	asking            bool   // after ASK: every command goes after ASKING
	token             string // the owner token of the attempt this op belongs to
	cleanup           bool   // the clean-up delete of an abandoned acquisition
	ordered           bool   // ... sent where its SET cannot run after it (same connection, or after a fence)
}

// opLabel renders an op id as attempt.op for the transcript.
func opLabel(id int64) string {
	s := itoa(id>>32) + "." + itoa(id&0xfffff)
	if id&(1<<31) != 0 {
		s += "+" + itoa((id>>20)&0x7ff)
	}
	return s
}

// startOp executes EffSend.
func (w *world) startOp(h *handle, e Effect) {
	op := &opRun{id: e.Op, h: h, kind: e.OpKind, ttl: e.TTL, fenced: e.Fenced, afterUncertainSet: h.uncertainSet,
		mustSeal: append([]*connection(nil), h.uncertainWrites...), cleanup: e.Cleanup}
	h.ops[op.id] = op
	if e.Token != "" && e.Token != h.token {
		h.token = e.Token // a new acquisition try with a fresh token
		w.trace.nameToken(h.token, h.name)
	}
	op.token = h.token
	if e.Cleanup {
		w.startCleanup(op, h.ops[e.After])
		return
	}
	if w.bind(op, w.routeFor(h.proc, h.key)) {
		w.writeOp(op)
	}
}

// startCleanup sends the clean-up delete of an abandoned acquisition as
// lease does: on the SET's own connection while it lives (the delete
// queues behind the SET), otherwise after fencing that connection, so that
// the SET cannot run after the delete. Without an identity to fence, the
// delete is best effort.
func (w *world) startCleanup(op, set *opRun) {
	if set == nil || set.wrote == nil || set.sess == nil {
		w.bindAndWrite(op, w.routeFor(op.h.proc, op.h.key))
		return
	}
	target := set.wrote.node
	switch {
	case set.wrote.stale() && set.sess.identity != identityReady:
		w.bindAndWrite(op, target)
	case set.wrote.stale():
		w.fenceConn(op.h.proc, set.wrote, set.sess, func(ok bool) {
			op.ordered = ok
			w.bindAndWrite(op, target)
		})
	default:
		op.ordered = true // liveSession returns the SET's own session
		w.bindAndWrite(op, target)
	}
}

func (w *world) bindAndWrite(op *opRun, n *node) {
	if w.bind(op, n) {
		w.writeOp(op)
	}
}

// bind points op at node n: fenced acquisitions (coordination/) use the
// multiplexed connection, everything else the node's session (a fresh
// Operation from that session's capabilities, after its identity
// handshake), as lease does. It reports whether op may be written now;
// otherwise it waits for the handshake.
func (w *world) bind(op *opRun, n *node) bool {
	h, p := op.h, op.h.proc
	if op.kind == OpAcquire && h.fenced {
		op.carrier = w.liveConn(p, &p.mux, n, "mux")
		op.script = conn.NewFencedAcquire(h.key, counterKey(h.key), op.token, millis(op.ttl))
		return true
	}
	op.sess = w.liveSession(p, n)
	op.carrier = op.sess.conn
	caps := op.sess.caps.Load()
	switch op.kind {
	case OpAcquire:
		op.protocol = conn.NewAcquire(h.key, op.token, millis(op.ttl))
	case OpExtend:
		op.protocol = conn.NewExtend(h.key, op.token, millis(op.ttl), caps)
	case OpRelease:
		op.protocol = conn.NewRelease(h.key, op.token, caps)
	case OpVerify:
		op.protocol = conn.NewOwnerQuery(h.key)
	}
	return w.ensureIdentity(op.sess, op)
}

// redirect follows a MOVED reply the way conn's pool does: the command
// did not run; correct the slot map, retire the session that got it and
// run the op again on the target's session.
func (w *world) redirect(op *opRun, rd conn.Redirect) {
	target := w.nodeByAddr(rd.Addr)
	if target == nil {
		w.finish(op, OpResult{Class: Definite, Err: "MOVED to an unknown node " + rd.Addr})
		return
	}
	if !rd.Ask {
		op.h.proc.route[op.h.key] = target
	}
	op.asking = rd.Ask
	w.stats.Redirects++
	op.written = false // MOVED proves the command did not run: a cancel from here on is "not submitted"
	if op.deadline != nil {
		op.deadline.cancelled = true
		op.deadline = nil
	}
	w.trace.logf(w, op.h.proc, op.h.name, "%s %s redirected to %s (ask=%v)", op.kind, opLabel(op.id), target.name, rd.Ask)
	if op.sess != nil {
		w.retire(op.sess)
	}
	if w.bind(op, target) {
		w.writeOp(op)
	}
}

// writeOp writes op's first command, possibly after a wait for capacity
// (during which a cancel is still "not submitted").
func (w *world) writeOp(op *opRun) {
	if op.sess != nil && op.kind != OpAcquire {
		op.noIdent = op.sess.identity == identityDenied // fences matter to renewals and releases
	}
	if w.shouldDelayWrite() {
		op.gate = w.schedule(op.h.proc, w.now+w.between(0, 5*time.Millisecond), func() {
			op.gate = nil
			w.sendStep(op)
		})
		return
	}
	w.sendStep(op)
}

// sendStep writes the op's current command and arms its deadline.
func (w *world) sendStep(op *opRun) {
	if op.done {
		return
	}
	c := op.carrier
	if c.closed || c.abandoned {
		// every earlier command of op got a reply proving it did not run
		w.finish(op, OpResult{Class: NotSubmitted, Err: "connection closed before the write"})
		return
	}
	if c.serverGone && op.wrote != c && w.shouldNoticeDead() {
		// conn's idle PING or death watch finds the socket dead before the
		// hand-off: the session is retired and the op goes to a fresh one.
		w.trace.logf(w, op.h.proc, op.h.name, "%s found connection %d dead before the write", op.kind, c.clientID)
		w.closeConn(c, io.EOF)
		w.bindAndWrite(op, c.node)
		return
	}
	if op.asking {
		w.write(c, &request{cmd: conn.AskingCommand(), onReply: func(conn.Reply) {}, onLost: func(error) {}})
	}
	req := &request{cmd: w.command(op), op: op}
	req.onReply = func(r conn.Reply) { w.opReply(op, req, r) }
	req.onLost = func(err error) { w.opLost(op, err) }
	w.write(c, req) // the checker sees the op as it was before this command
	op.written, op.replied, op.confirmed = true, false, false
	op.sent++
	op.wrote, op.clientID = c, c.clientID
	if op.sess != nil {
		op.clientID, op.addr = op.sess.id, op.sess.addr
	}
	w.armDeadline(op)
}

// command is the op's current command; the mutation hook may rewrite it.
func (w *world) command(op *opRun) conn.Command {
	h := op.h
	if op.kind == OpAcquire && op.script != nil {
		return op.script.Command()
	}
	cmd := op.protocol.Command()
	if w.opt.Mutation == MutationRenewWithoutCompare && op.kind == OpExtend {
		return conn.Command{Args: []string{"PEXPIRE", h.key, itoa(millis(op.ttl))}, Key: 1}
	}
	return cmd
}

func (w *world) armDeadline(op *opRun) {
	if op.deadline != nil {
		op.deadline.cancelled = true
	}
	p := op.h.proc
	at := p.trueAt(p.local(w.now) + w.opt.CommandTimeout)
	op.deadline = w.schedule(p, at, func() {
		op.deadline = nil
		if op.done {
			return
		}
		if w.opt.Mutation == MutationFallbackAfterTimeout && w.mutateFallback(op) {
			return
		}
		// The caller's deadline ended the wait; the socket stays in use
		// (conn retires a session on transport failures only).
		w.trace.logf(w, p, op.h.name, "%s timed out after the write", op.kind)
		w.finish(op, OpResult{Class: Uncertain, Err: "command timeout"})
	})
}

// mutateFallback is the broken variant: on a timeout, pretend the reply
// was the confirming one and send the next implementation.
func (w *world) mutateFallback(op *opRun) bool {
	if op.protocol == nil {
		return false
	}
	var fake string
	switch op.protocol.Step() {
	case conn.StepSetIfeq:
		fake = "ERR syntax error"
	case conn.StepDelex:
		fake = "ERR unknown command 'DELEX', with args beginning with: "
	case conn.StepDelifeq:
		fake = "ERR unknown command 'DELIFEQ', with args beginning with: "
	case conn.StepExtendEvalsha, conn.StepReleaseEvalsha:
		fake = "NOSCRIPT No matching script."
	default:
		return false
	}
	out := op.protocol.Interpret(conn.Reply{Kind: conn.ReplyError, Text: fake})
	if out.Done {
		return false
	}
	w.sendStep(op)
	return true
}

// opReply interprets a reply with conn's protocol and either finishes the
// op or writes the fallback command conn chose.
func (w *world) opReply(op *opRun, req *request, r conn.Reply) {
	if op.done {
		return
	}
	op.replied = true
	op.confirmed = w.check.confirming(req.cmd, r)
	if op.script != nil {
		w.fencedReply(op, r)
		return
	}
	out := op.protocol.Interpret(r)
	op.sess.caps.Add(out.Learned)
	if out.Learned != 0 {
		w.trace.logf(w, op.h.proc, op.h.name, "session learned %s", out.Learned)
	}
	switch {
	case !out.Done:
		w.stats.Fallbacks++
		w.sendStep(op)
	case out.Redirect != nil:
		w.redirect(op, *out.Redirect)
	case op.kind == OpVerify:
		w.finish(op, definite(out.Owned && out.Value == op.h.token, out.Err))
	default:
		w.finish(op, definite(out.Owned, out.Err))
	}
}

func definite(owned bool, err *conn.ServerError) OpResult {
	if err != nil {
		return OpResult{Class: Definite, Err: err.Error()}
	}
	return OpResult{Class: Definite, Owned: owned}
}

// opLost: the connection failed after the write with err, the error
// rueidis reports; conn's classification decides what it proves.
func (w *world) opLost(op *opRun, err error) {
	if op.done {
		return
	}
	if op.sess != nil {
		w.retire(op.sess)
	}
	w.finish(op, OpResult{Class: w.classify(err), Err: "connection lost: " + err.Error()})
}

// classify is conn.ClassifyTransport, except under
// MutationClosingNotSubmitted.
func (w *world) classify(err error) Class {
	if w.opt.Mutation == MutationClosingNotSubmitted && errors.Is(err, rueidis.ErrClosing) {
		return NotSubmitted
	}
	if conn.ClassifyTransport(err) == conn.NotSubmitted {
		return NotSubmitted
	}
	return Uncertain
}

// cancelOp executes EffCancelOp: before the write it is NotSubmitted;
// after, Uncertain.
func (w *world) cancelOp(op *opRun) {
	if op == nil || op.done {
		return
	}
	if !op.written {
		if op.gate != nil {
			op.gate.cancelled = true
		}
		w.finish(op, OpResult{Class: NotSubmitted, Err: "context canceled"})
		return
	}
	w.finish(op, OpResult{Class: Uncertain, Err: "context canceled"})
}

// finish records op's outcome and hands it to the core as its own event.
func (w *world) finish(op *opRun, res OpResult) {
	if op.done {
		return
	}
	op.done = true
	if op.deadline != nil {
		op.deadline.cancelled = true
	}
	if op.gate != nil {
		op.gate.cancelled = true
	}
	res.NoIdentity = res.NoIdentity || op.noIdent
	op.uncertain = res.Class == Uncertain
	switch res.Class {
	case Uncertain:
		w.stats.Uncertain++
	case NotSubmitted:
		w.stats.NotSubmitted++
	}
	h := op.h
	w.trace.logf(w, h.proc, h.name, "%s %s ends %s owned=%v %s", op.kind, opLabel(op.id), res.Class, res.Owned, res.Err)
	if op.cleanup && op.ordered && res.Class == Definite && res.Err == "" {
		w.check.cleaned[op.token] = h.key // invariant 8 from now on
	}
	w.schedule(h.proc, w.now, func() {
		if op.uncertain {
			w.check.onUncertain(w, op) // from now on the core knows
		}
		w.input(h, Input{Kind: InOpDone, Op: op.id, Result: res})
	})
}

func millis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
