package dst

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
)

// pending is one exchange on a session: commands written together, in
// order, and what came back. done is closed once every reply came, or the
// connection was lost under them.
type pending struct {
	replies []conn.Reply
	got     int
	lost    error // what rueidis would have reported, when the connection died first
	done    chan struct{}
	over    bool // done is closed
}

func (x *pending) finish() {
	if !x.over {
		x.over = true
		close(x.done)
	}
}

// exchange writes cmds (consecutive, pipelined) on s, cmds[i] for the op
// recs[i] (nil: none, as ASKING), and waits for their replies, as conn's session does: nothing is written when ctx
// is done, the session retired or found dead first (conn's idle PING or
// death watch, NoticeDeadPercent), or route aborts (NotSubmitted); a write
// waiting for in-flight capacity is still not submitted when ctx ends; a
// caller whose ctx ends after the write returns at once, Uncertain, and
// the session goes on for the others (the late reply is dropped); a
// connection lost under the commands is classified by
// conn.ClassifyTransport and retires the session.
func (s *simSession) exchange(ctx context.Context, recs []*opRun, name string, cmds []conn.Command,
	route *conn.Route) ([]conn.Reply, error) {
	if err := s.sendable(ctx); err != nil {
		return nil, s.notSent(name, err)
	}
	if !route.Carry(s) {
		return nil, s.notSent(name, conn.ErrAborted)
	}
	w := s.t.w
	if w.shouldDelayWrite() {
		gate := make(chan struct{})
		w.schedule(s.t.p, w.now+w.between(0, 5*time.Millisecond), func() { close(gate) })
		if err := s.t.p.spawn.Wait(ctx, gate); err != nil {
			return nil, s.notSent(name, err)
		}
		if s.retired || s.conn.stale() {
			return nil, s.notSent(name, conn.ErrSessionRetired)
		}
	}
	x := s.write(recs, cmds)
	if err := s.t.p.spawn.Wait(ctx, x.done); err != nil {
		x.over = true // its replies are dropped; the session stays in use
		return nil, &conn.Error{Class: conn.Uncertain, Op: name, Addr: s.node.addr, Session: s, Err: err}
	}
	if x.lost != nil {
		return nil, s.transportError(ctx, name, x.lost)
	}
	return x.replies, nil
}

// sendable is checked right before the hand-off, as conn's notSendable.
func (s *simSession) sendable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if s.retired || s.conn.stale() {
		return conn.ErrSessionRetired
	}
	if c := s.conn; c.serverGone && s.t.w.shouldNoticeDead() {
		s.t.w.trace.logf(s.t.w, s.t.p, "", "found connection %d dead before the write", c.clientID)
		s.t.w.closeConn(c, io.EOF)
		return errors.Join(conn.ErrSessionRetired, io.EOF)
	}
	return nil
}

func (s *simSession) notSent(name string, err error) *conn.Error {
	return &conn.Error{Class: conn.NotSubmitted, Op: name, Addr: s.node.addr, Session: s, Err: err}
}

// write puts cmds on the wire for their ops and returns their exchange.
func (s *simSession) write(recs []*opRun, cmds []conn.Command) *pending {
	w := s.t.w
	x := &pending{replies: make([]conn.Reply, len(cmds)), done: make(chan struct{})}
	for i, cmd := range cmds {
		r := &request{cmd: cmd, op: recs[i]}
		r.onReply = func(reply conn.Reply) {
			x.replies[i] = reply
			if x.got++; x.got == len(cmds) {
				x.finish()
			}
		}
		r.onLost = func(err error) {
			if !x.over {
				x.lost = err
				x.finish()
			}
		}
		w.write(s.conn, r)
		if r.op != nil {
			r.op.wrote(s.conn)
		}
	}
	return x
}

// transportError classifies a connection lost under a command with
// conn.ClassifyTransport (MutationClosingNotSubmitted: ErrClosing counts as
// not submitted) and retires the session, as conn's transportError; a
// command proved unwritten is joined with ErrSessionRetired, so a fresh
// session may send it.
func (s *simSession) transportError(ctx context.Context, name string, err error) *conn.Error {
	class := classifyTransport(err)
	if s.t.w.opt.Mutation == MutationClosingNotSubmitted && errors.Is(err, rueidis.ErrClosing) {
		class = conn.NotSubmitted
	}
	if ctx.Err() == nil {
		s.t.retire(s)
	}
	if class == conn.NotSubmitted {
		err = errors.Join(conn.ErrSessionRetired, err)
	}
	return &conn.Error{Class: class, Op: name, Addr: s.node.addr, Session: s, Err: err}
}
