package dst

import (
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/capstore"
	"github.com/respire-go/respire/conn"
)

// process is one simulated client process: its own drifting monotonic
// clock, one session (a pinned connection with capability memory and an
// identity) to the node, a multiplexed connection for acquisitions and a
// control connection for fences. A paused process handles no events.
type process struct {
	index    int
	name     string
	driftPPM int64
	offset   time.Duration
	paused   bool

	session    *session
	mux        *connection
	control    *connection
	noIdentity bool // CLIENT ID / CLIENT KILL definitively denied (cached, like the original)

	current map[string]*handle // the handle the user works with, per key
	calls   []*userCall        // pending user calls (cancellable)
	tokens  int

	bootstraps int // identity bootstraps started (deadline bookkeeping)
}

// session is conn's unit of capability memory: it lives and dies with its
// connection, so a reconnect or failover destination discovers afresh.
type session struct {
	conn     *connection
	caps     capstore.Store
	identity int // identityNone, identityPending, identityReady, identityDenied
	waiting  []*opRun
	failure  string // a non-definite bootstrap error, for the waiting ops
}

const (
	identityNone = iota
	identityPending
	identityReady
	identityDenied
)

func newProcess(w *World, index int) *process {
	p := &process{index: index, name: "p" + strconv.Itoa(index+1), current: map[string]*handle{}}
	if w.opt.DriftPPM > 0 {
		p.driftPPM = w.rng.Int64N(2*w.opt.DriftPPM+1) - w.opt.DriftPPM
	}
	p.offset = w.between(time.Second, 1000*time.Second)
	return p
}

// liveSession returns p's session, opening a new one if it was retired.
func (w *World) liveSession(p *process) *session {
	if p.session == nil || p.session.conn.closed || p.session.conn.abandoned ||
		p.session.conn.generation != w.node.generation {
		p.session = &session{conn: w.open(p, "session")}
	}
	return p.session
}

// liveConn returns a usable connection in *slot, reopening it when needed.
func (w *World) liveConn(p *process, slot **connection, role string) *connection {
	c := *slot
	if c == nil || c.closed || c.abandoned || c.generation != w.node.generation {
		c = w.open(p, role)
		*slot = c
	}
	return c
}

// retire abandons p's session: the process stops using it and will open a
// new one. Commands already written may still run at the server (the
// socket is closed from our side only); that is what the fence is for.
func (w *World) retire(s *session) {
	w.abandon(s.conn)
}

// ensureIdentity bootstraps CLIENT ID and the CLIENT KILL permission probe
// on s before op is written, once per session; op waits meanwhile.
func (w *World) ensureIdentity(s *session, op *opRun) bool {
	p := s.conn.proc
	if p.noIdentity {
		s.identity = identityDenied
	}
	switch s.identity {
	case identityReady, identityDenied:
		return true
	case identityPending:
		s.waiting = append(s.waiting, op)
		return false
	}
	s.identity = identityPending
	s.waiting = append(s.waiting, op)
	p.bootstraps++
	gen := p.bootstraps
	at := p.trueAt(p.local(w.now) + w.opt.CommandTimeout)
	w.schedule(p, at, func() {
		if s.identity == identityPending && p.bootstraps == gen {
			w.trace.logf(w, p, "", "identity bootstrap timed out")
			w.retire(s)
			w.identityFailed(s, "")
		}
	})
	id := conn.ClientIDCommand()
	w.write(s.conn, &request{cmd: id, onLost: func() { w.identityFailed(s, "") },
		onReply: func(r conn.Reply) {
			if r.Kind != conn.ReplyInt {
				w.identityReply(s, r)
				return
			}
			w.write(s.conn, &request{cmd: conn.ProbeKillCommand(r.Int),
				onLost:  func() { w.identityFailed(s, "") },
				onReply: func(r conn.Reply) { w.identityReply(s, r) }})
		}})
	return false
}

// identityReply ends the bootstrap: a non-error probe reply means ready; a
// definitive denial (NOPERM, unknown command/subcommand) is cached per
// process; any other error fails the waiting ops without caching.
func (w *World) identityReply(s *session, r conn.Reply) {
	switch {
	case r.Kind != conn.ReplyError:
		s.identity = identityReady
	case definitiveDenial(r.Text):
		s.identity = identityDenied
		s.conn.proc.noIdentity = true
		w.trace.logf(w, s.conn.proc, "", "identity denied (%s): releases go unfenced", r.Text)
	default:
		s.identity = identityNone
		s.failure = r.Text
		w.identityFailed(s, r.Text)
		return
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
func (w *World) identityFailed(s *session, serverErr string) {
	waiting := s.waiting
	s.waiting = nil
	if s.identity == identityPending {
		s.identity = identityNone
	}
	for _, op := range waiting {
		if serverErr != "" {
			w.finish(op, OpResult{Class: Definite, Err: serverErr})
		} else {
			w.finish(op, OpResult{Class: NotSubmitted, Err: "connection lost before the write"})
		}
	}
}

// definitiveDenial is the original's "definitive correction-ordering
// failure" (respire-behaviour.md R10).
func definitiveDenial(text string) bool {
	if len(text) >= 6 && text[:6] == "NOPERM" {
		return true
	}
	low := strings.ToLower(text)
	return len(low) >= 3 && low[:3] == "err" &&
		(strings.Contains(low, "unknown command") || strings.Contains(low, "unknown subcommand") ||
			strings.Contains(low, "wrong number of arguments"))
}
