package dst

import (
	"context"
	"errors"
	"strings"

	"github.com/respire-go/respire/capstore"
	"github.com/respire-go/respire/conn"
)

// simSession is one pinned connection to one node, as conn's session is:
// it owns the capability memory and the identity of that connection, lives
// and dies with it (a reconnect or failover destination discovers afresh),
// and is retired after a MOVED, ASK or READONLY reply, a transport failure
// (unless the caller's own ctx ended the wait), a fence, or once the
// process finds its socket closed.
type simSession struct {
	t    *simTransport
	node *node
	conn *connection
	caps capstore.Store

	identity    conn.Identity
	hasIdentity bool
	identityErr error
	retired     bool

	fence         *fenceCall // the latest CLIENT KILL of this session
	fenceAnswered bool       // a fence of it was answered
}

// openCall is one session open in flight, shared by every caller that
// needs the node's session meanwhile.
type openCall struct {
	done chan struct{}
	s    *simSession
	err  error
}

// Node implements conn.Session.
func (s *simSession) Node() string { return s.node.addr }

// Retired implements conn.Session.
func (s *simSession) Retired() bool { return s.retired }

// Demoted implements conn.Session: no node stops being a primary.
func (s *simSession) Demoted() bool { return false }

// Identity implements conn.Session.
func (s *simSession) Identity() (conn.Identity, bool) { return s.identity, s.hasIdentity }

// IdentityError implements conn.Session.
func (s *simSession) IdentityError() error { return s.identityErr }

// sessionFor returns n's current session, opening one (the handshake is
// shared by the callers that come meanwhile) when there is none or it was
// retired. A caller whose ctx ends first gets a NotSubmitted error; the
// open goes on for the others.
func (t *simTransport) sessionFor(ctx context.Context, n *node) (*simSession, error) {
	t.grow(n)
	if s := t.sessions[n.index]; s != nil && !s.retired {
		return s, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: n.addr, Err: context.Cause(ctx)}
	}
	oc := t.opening[n.index]
	if oc == nil {
		oc = t.startOpen(n)
	}
	if err := t.p.spawn.Wait(ctx, oc.done); err != nil {
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: n.addr, Err: err}
	}
	if oc.err != nil {
		return nil, oc.err
	}
	return oc.s, nil
}

// errHandshakeTimeout: the session's CLIENT ID and CLIENT INFO got no
// answer in time (a dial that hangs, as rueidis' dial timeout ends it).
var errHandshakeTimeout = errors.New("session handshake timed out")

// startOpen connects to n and sends the identity handshake, CLIENT ID and
// CLIENT INFO pipelined, as conn opens a session; its answers make the
// session n's current one. A lost connection or a handshake that takes
// longer than the command timeout (the lease's shortest when there is
// none) fails the open, not submitted.
func (t *simTransport) startOpen(n *node) *openCall {
	w := t.w
	oc := &openCall{done: make(chan struct{})}
	t.opening[n.index] = oc
	c := w.open(t.p, n, "session")
	s := &simSession{t: t, node: n, conn: c}
	c.session = s
	fail := func(err error) {
		if t.opening[n.index] != oc {
			return
		}
		t.opening[n.index] = nil
		oc.err = &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: n.addr, Err: err}
		s.retired = true
		w.retireConn(c)
		close(oc.done)
	}
	bound := w.opt.commandTimeout()
	if bound == 0 {
		bound = w.opt.LeaseMin
	}
	t.p.clock.AfterFunc(bound, func() { fail(errHandshakeTimeout) })
	var idReply conn.Reply
	w.write(c, &request{cmd: conn.ClientIDCommand(), onLost: fail, onReply: func(r conn.Reply) { idReply = r }})
	w.write(c, &request{cmd: conn.ClientInfoCommand(), onLost: fail, onReply: func(r conn.Reply) {
		if t.opening[n.index] != oc {
			return
		}
		t.opening[n.index] = nil
		s.learnIdentity(idReply, r)
		t.sessions[n.index], oc.s = s, s
		close(oc.done)
	}})
	return oc
}

// learnIdentity reads CLIENT ID and CLIENT INFO's addr=; a session whose
// identity was refused works without one (it cannot be fenced).
func (s *simSession) learnIdentity(id, info conn.Reply) {
	switch {
	case id.Kind != conn.ReplyInt:
		s.identityErr = replyError(id)
	case info.Kind != conn.ReplyBulk:
		s.identityErr = replyError(info)
	}
	if s.identityErr == nil {
		for _, field := range strings.Fields(info.Text) {
			if addr, ok := strings.CutPrefix(field, "addr="); ok {
				s.identity, s.hasIdentity = conn.Identity{ID: id.Int, Addr: addr}, true
			}
		}
		if !s.hasIdentity {
			s.identityErr = errors.New("CLIENT INFO has no addr= field")
		}
	}
	if !s.hasIdentity {
		s.t.w.trace.logf(s.t.w, s.t.p, "", "session id=%d has no identity (%v): unfenced", s.conn.clientID, s.identityErr)
	}
}

// replyError is the error a reply that is not the expected answer stands
// for: the server's error text, code first.
func replyError(r conn.Reply) error {
	if r.Kind == conn.ReplyError {
		code, _, _ := strings.Cut(r.Text, " ")
		return &conn.ServerError{Code: code, Message: r.Text}
	}
	return errors.New("unexpected reply " + replyString(r))
}

// retire retires s, as conn does after a redirect, a transport failure or
// a fence: nothing new is handed to it, its connection is closed once
// what it carries is answered (or given up), and the node's next command
// opens a fresh session.
func (t *simTransport) retire(s *simSession) {
	t.forget(s)
	t.w.retireConn(s.conn)
}

// forget marks s retired and stops handing it out (its socket is closed,
// or about to be).
func (t *simTransport) forget(s *simSession) {
	s.retired = true
	if s.node.index < len(t.sessions) && t.sessions[s.node.index] == s {
		t.sessions[s.node.index] = nil
	}
}
