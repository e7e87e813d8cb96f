package dst

import (
	"strconv"

	"github.com/redis/rueidis"
	"strings"
	"time"

	"github.com/respire-go/respire/capstore"
	"github.com/respire-go/respire/conn"
)

// process is one simulated client process: its own drifting monotonic
// clock, one session (a pinned connection with capability memory and an
// identity) per node, a multiplexed connection for fenced acquisitions and
// a control connection for fences. A paused process handles no events.
type process struct {
	index    int
	name     string
	driftPPM int64
	offset   time.Duration
	paused   bool

	sessions []*session       // per node index
	mux      []*connection    // per node index: the multiplexed client's connection (fenced acquisitions)
	control  []*connection    // per node index: where fences are sent
	route    map[string]*node // the process's slot map: key -> node (corrected by MOVED)

	current map[string]*handle // the handle the user works with, per key
	calls   []*userCall        // pending user calls (cancellable)
	tokens  int

	lastFencingToken map[string]int64 // counter -> last token accepted (MutationReuseFencingToken)
}

// session is conn's unit of capability memory: it lives and dies with its
// connection, so a reconnect or failover destination discovers afresh.
type session struct {
	conn     *connection
	caps     capstore.Store
	identity int // identityNone, identityPending, identityReady, identityDenied
	waiting  []*opRun
	id       int64  // CLIENT ID (identityReady)
	addr     string // addr= of CLIENT INFO (identityReady)
}

const (
	identityNone = iota
	identityPending
	identityReady
	identityDenied
)

func newProcess(w *world, index int) *process {
	p := &process{index: index, name: "p" + strconv.Itoa(index+1), current: map[string]*handle{},
		route: map[string]*node{}, lastFencingToken: map[string]int64{}}
	if w.opt.DriftPPM > 0 {
		p.driftPPM = w.rng.Int64N(2*w.opt.DriftPPM+1) - w.opt.DriftPPM
	}
	p.offset = w.between(time.Second, 1000*time.Second)
	return p
}

// routeFor is the node p believes owns key.
func (w *world) routeFor(p *process, key string) *node {
	if n := p.route[key]; n != nil {
		return n
	}
	return w.nodes[0]
}

// liveSession returns p's session to n, opening a new one if it was retired.
func (w *world) liveSession(p *process, n *node) *session {
	for len(p.sessions) <= n.index {
		p.sessions = append(p.sessions, nil)
	}
	if s := p.sessions[n.index]; s == nil || s.conn.stale() {
		p.sessions[n.index] = &session{conn: w.open(p, n, "session")}
	}
	return p.sessions[n.index]
}

// liveConn returns a usable connection to n from conns (mux or control),
// reopening it when needed.
func (w *world) liveConn(p *process, conns *[]*connection, n *node, role string) *connection {
	for len(*conns) <= n.index {
		*conns = append(*conns, nil)
	}
	if c := (*conns)[n.index]; c.stale() {
		(*conns)[n.index] = w.open(p, n, role)
	}
	return (*conns)[n.index]
}

// retire retires s as conn's pool does: no new command goes to it, the
// replies of commands already written are still read, then the socket is
// closed. Like rueidis' Close, the wait for those replies is bounded: once
// the escape time has passed, the requests still unanswered fail with
// rueidis.ErrClosing although the server may still run them. The process
// opens a new session (fresh capabilities) next time.
func (w *world) retire(s *session) {
	c := s.conn
	if c.closed || c.retired {
		return
	}
	c.retired = true
	if len(c.inFlight) == 0 {
		w.closeConn(c, rueidis.ErrClosing)
		return
	}
	w.schedule(c.proc, w.now+w.between(0, 2*w.opt.LatencyMax), func() {
		if !c.closed && len(c.inFlight) > 0 {
			w.trace.logf(w, c.proc, "", "closing connection %d gave up waiting for %d replies", c.clientID, len(c.inFlight))
			w.abandon(c)
		}
	})
}

// ensureIdentity makes op wait until s's opening handshake (CLIENT ID and
// CLIENT INFO, pipelined, as conn opens a session) has answered. A session
// whose identity was refused works unfenced.
func (w *world) ensureIdentity(s *session, op *opRun) bool {
	switch s.identity {
	case identityReady, identityDenied:
		return true
	case identityPending:
		s.waiting = append(s.waiting, op)
		return false
	}
	p := s.conn.proc
	s.identity = identityPending
	s.waiting = append(s.waiting, op)
	at := p.trueAt(p.local(w.now) + w.opt.CommandTimeout)
	w.schedule(p, at, func() {
		if s.identity == identityPending {
			w.trace.logf(w, p, "", "session handshake timed out")
			w.retire(s)
			w.identityFailed(s)
		}
	})
	var idReply conn.Reply
	lost := func(error) { w.identityFailed(s) }
	w.write(s.conn, &request{cmd: conn.ClientIDCommand(), onLost: lost,
		onReply: func(r conn.Reply) { idReply = r }})
	w.write(s.conn, &request{cmd: conn.ClientInfoCommand(), onLost: lost,
		onReply: func(r conn.Reply) { w.identityReply(s, idReply, r) }})
	return false
}

// identityReply ends the handshake: the session has an identity when both
// replies are good; otherwise it works without one (no fence possible).
func (w *world) identityReply(s *session, id, info conn.Reply) {
	if s.identity != identityPending {
		return
	}
	s.identity = identityDenied
	if id.Kind == conn.ReplyInt && info.Kind == conn.ReplyBulk {
		for _, field := range strings.Fields(info.Text) {
			if addr, ok := strings.CutPrefix(field, "addr="); ok {
				s.identity, s.id, s.addr = identityReady, id.Int, addr
			}
		}
	}
	if s.identity == identityDenied {
		w.trace.logf(w, s.conn.proc, "", "session has no identity (%s / %s): unfenced", replyString(id), replyString(info))
	}
	waiting := s.waiting
	s.waiting = nil
	for _, op := range waiting {
		if !op.done {
			w.writeOp(op)
		}
	}
}

// identityFailed finishes the waiting ops: none of them was written.
func (w *world) identityFailed(s *session) {
	if s.identity != identityPending {
		return
	}
	s.identity = identityNone
	waiting := s.waiting
	s.waiting = nil
	for _, op := range waiting {
		w.finish(op, OpResult{Class: NotSubmitted, Err: "connection lost before the write"})
	}
}
