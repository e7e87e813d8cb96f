package dst

import (
	"io"
	"strconv"
	"time"

	"github.com/respire-go/respire/conn"
)

// connection is one simulated TCP connection from a process's client to a
// node. Requests arrive at the server in the order they were written and
// replies — and, on a listener, invalidations — come back in order (TCP);
// the scheduler interleaves connections freely. The client's side of it
// is a simConn (simconn.go).
type connection struct {
	id         int64
	proc       *process
	node       *node // the server it is connected to
	generation int   // node generation it was opened to
	clientID   int64 // the server's CLIENT ID for it
	addr       string
	role       string       // "conn" (Client.Dial) or "listen" (Client.Listen)
	sc         *simConn     // the client's conn.Conn for it
	listener   *simListener // the invalidations it receives go to it
	lostErr    error        // what its unanswered commands failed with once it closed
	closed     bool
	abandoned  bool       // closed by the client; written commands still run
	retired    bool       // no new commands; closed once the written ones are answered
	serverGone bool       // the server closed it; the process has not noticed yet (writes vanish)
	asking     bool       // server side: the last command was ASKING
	inFlight   []*request // written, not yet answered (order of writing)
	toServer   []*request // written, not yet arrived (FIFO)
	toClient   []answer   // executed (or pushed), travelling back (FIFO)
	lastArrive time.Duration
	lastReply  time.Duration
}

// answer is a reply, or a push, on its way back.
type answer struct {
	r     *request // nil for a push
	reply conn.Reply
	keys  []string // a push: the invalidated keys (nil with flush)
	flush bool     // a push: everything tracked is forgotten
}

// request is one command written on a connection.
type request struct {
	cmd     conn.Command
	op      *opRun // the lock operation it belongs to; nil for the engine's own traffic
	conn    *connection
	onReply func(conn.Reply)
	onLost  func(err error) // the connection died before the reply arrived; err is what the client reports
	settled bool
	ordered bool // a release: no SET of its token could run after it (invariant 8)
	late    bool // written after its operation ended uncertain (attribute.go)
	// a fenced acquisition that handed out a token: the script run, in
	// server order (invariant 6)
	scriptRun int64
}

// opLabel names r's operation in the transcript: " (op N)", " (op N,
// late)", or "" for none.
func (r *request) opLabel() string {
	switch {
	case r.op == nil:
		return ""
	case r.late:
		return " (op " + strconv.FormatInt(r.op.id, 10) + ", late)"
	}
	return " (op " + strconv.FormatInt(r.op.id, 10) + ")"
}

// open connects p to node n.
func (w *world) open(p *process, n *node, role string) *connection {
	c := &connection{id: w.id(), proc: p, node: n, generation: n.generation, role: role}
	c.addr = "10.0.0." + strconv.Itoa(p.index+1) + ":" + strconv.FormatInt(40000+c.id, 10)
	c.clientID = n.engine.NewClient(c.addr)
	w.conns = append(w.conns, c)
	n.byID[c.clientID] = c
	w.trace.logf(w, p, "", "connect %s to %s id=%d", role, n.name, c.clientID)
	return c
}

// closingErr is what a command in flight on c fails with when the
// process closed c itself.
func (c *connection) closingErr() error { return errClosedLocally }

// label names c in messages: "connection id=<client id> to <node>".
func (c *connection) label() string {
	return "connection id=" + strconv.FormatInt(c.clientID, 10) + " to " + c.node.name
}

// gone reports whether nothing written on c can run any more because the
// server side is closed (dropped, killed, failed over, or closed once its
// written commands ran); a fence seals it too (see checker.unsealed).
func (c *connection) gone() bool {
	return c.closed || c.generation != c.node.generation || c.serverGone
}

// write sends r on c: it arrives at the server after a latency drawn now,
// never before the previous command on c.
func (w *world) write(c *connection, r *request) {
	r.conn = c
	if c.closed {
		panic("dst: write on a closed connection")
	}
	c.inFlight = append(c.inFlight, r)
	c.toServer = append(c.toServer, r)
	w.check.onSend(w, r)
	arrive := max(w.now+w.between(w.opt.LatencyMin, w.opt.LatencyMax), c.lastArrive)
	c.lastArrive = arrive
	w.schedule(nil, arrive, func() { w.arrive(c) })
}

// arrive is the server side of a command: faults, execution, the reply's
// trip back. While the node is paused the arrival is retried later. A
// command reaching a connection the server already closed never runs.
func (w *world) arrive(c *connection) {
	n := c.node
	if c.closed || c.serverGone || c.generation != n.generation || len(c.toServer) == 0 {
		return
	}
	if n.paused {
		c.lastArrive = max(c.lastArrive, n.resumeAt)
		w.schedule(nil, n.resumeAt, func() { w.arrive(c) })
		return
	}
	r := c.toServer[0]
	c.toServer = c.toServer[1:]
	if w.shouldDropBeforeExec() {
		w.trace.logf(w, c.proc, "", "fault: connection %d lost before %s ran", c.clientID, r.cmd.Args[0])
		w.serverClose(c)
		return
	}
	reply, ok := n.exec(w, c, r)
	if !ok {
		w.serverClose(c)
		return
	}
	w.takePushes(n)
	if c.abandoned {
		if len(c.toServer) == 0 {
			w.closeConn(c, c.closingErr())
		}
		return
	}
	if w.shouldDropAfterExec() {
		w.trace.logf(w, c.proc, "", "fault: connection %d lost after %s ran", c.clientID, r.cmd.Args[0])
		w.serverClose(c)
		return
	}
	delay := w.between(w.opt.LatencyMin, w.opt.LatencyMax)
	if w.shouldDelayReplyPastDeadline() {
		late := max(w.opt.CommandTimeout, 10*time.Millisecond)
		delay += late + w.between(0, late)
	}
	w.sendBack(c, answer{r: r, reply: reply}, delay)
}

// sendBack puts a onto c's way back, delay from now but never before what
// c sent back earlier (TCP).
func (w *world) sendBack(c *connection, a answer, delay time.Duration) {
	back := max(w.now+delay, c.lastReply)
	c.lastReply = back
	c.toClient = append(c.toClient, a)
	w.schedule(c.proc, back, func() { w.deliver(c) })
}

// deliver hands the oldest travelling reply or push to the process.
func (w *world) deliver(c *connection) {
	if c.closed || c.abandoned || len(c.toClient) == 0 {
		return
	}
	a := c.toClient[0]
	c.toClient = c.toClient[1:]
	if a.r == nil {
		if c.listener != nil {
			c.listener.pushed(w, a.keys, a.flush)
		}
		return
	}
	r := a.r
	if r.settled {
		return
	}
	w.removeInFlight(c, r)
	r.settled = true
	w.check.onReply(w, r, a.reply)
	w.noteFence(c, r, a.reply)
	r.onReply(a.reply)
	if c.retired && len(c.inFlight) == 0 {
		w.closeConn(c, c.closingErr())
	}
}

func (w *world) removeInFlight(c *connection, r *request) {
	for i, x := range c.inFlight {
		if x == r {
			c.inFlight = append(c.inFlight[:i], c.inFlight[i+1:]...)
			return
		}
	}
}

// serverClose is the server closing c (a drop, a kill, a failover): it
// forgets the client at once, replies already on their way still arrive,
// and the process notices only later — until then its writes on c vanish
// (a write into a socket the peer closed succeeds locally), and then every
// unanswered request fails with io.EOF.
func (w *world) serverClose(c *connection) {
	if c.closed || c.serverGone {
		return
	}
	c.serverGone = true
	if c.generation == c.node.generation {
		c.node.engine.CloseClient(c.clientID)
	}
	c.toServer = nil
	notice := w.now + w.between(w.opt.LatencyMin, 2*w.opt.LatencyMax)
	w.schedule(c.proc, notice, func() { w.closeConn(c, io.EOF) })
}

// closeConn kills c on both sides: the server forgets it, the client
// knows the socket is closed (a listener's handler is told), and every
// unanswered request on it is lost with err, each noticed by the process
// as its own event.
func (w *world) closeConn(c *connection, err error) {
	if c.closed {
		return
	}
	c.closed, c.lostErr = true, err
	if c.generation == c.node.generation && !c.serverGone {
		c.node.engine.CloseClient(c.clientID)
	}
	if l := c.listener; l != nil {
		l.connectionEnded()
	}
	lost := c.inFlight
	c.inFlight, c.toServer, c.toClient = nil, nil, nil
	for _, r := range lost {
		w.schedule(c.proc, w.now+w.opt.LatencyMin, func() {
			if !r.settled {
				r.settled = true
				r.onLost(err)
			}
		})
	}
}

// retireConn closes c as a client's Close of a busy socket does (rueidis'
// does exactly this): no new command goes to it, the replies of commands
// already written are still read, then the socket is closed. The wait for
// those replies is bounded: once the escape time has passed, the requests
// still unanswered fail with errClosedLocally although the server may
// still run them.
func (w *world) retireConn(c *connection) {
	if c.closed || c.retired {
		return
	}
	c.retired = true
	if len(c.inFlight) == 0 {
		w.closeConn(c, c.closingErr())
		return
	}
	w.schedule(c.proc, w.now+w.between(0, 2*w.opt.LatencyMax), func() {
		if !c.closed && len(c.inFlight) > 0 {
			w.trace.logf(w, c.proc, "", "closing connection %d gave up waiting for %d replies", c.clientID, len(c.inFlight))
			w.abandon(c)
		}
	})
}

// abandon closes c from the client side, as a client's Close does when its
// drain gives up: the process stops waiting for its replies (each
// unanswered request fails with errClosedLocally), but commands already
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
				r.onLost(c.closingErr())
			}
		})
	}
	if len(c.toServer) == 0 || c.serverGone {
		w.closeConn(c, c.closingErr())
	}
}
