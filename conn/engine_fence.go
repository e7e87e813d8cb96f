package conn

import (
	"context"
	"time"
)

// killCall is one CLIENT KILL of a session in flight or answered.
type killCall struct {
	done chan struct{} // closed when err is set
	err  error
}

// fenceBound bounds one attempt of a fence whose ctx has no deadline.
const fenceBound = 5 * time.Second

// Fence implements Transport: it kills session s's socket with CLIENT KILL
// ID <id> ADDR <addr>, sent on the fence connection of s's node — a
// connection dialled when s's node got its session, that never carries a
// lock command, so that whatever stalls s's socket (a proxy holding its
// bytes, a full buffer) does not hold up the kill. Once the kill answers,
// nothing still queued on the killed socket can run (the server answers the
// kill after the killed connection stopped running commands and discards
// what was queued on it; rule FenceIsFinal), so the outcome of every
// command s carried is settled. s is marked retired before the kill is
// sent (nothing new is handed to it) and closed once it answered; commands
// a drainer has in flight on it are answered Uncertain at once.
//
// Fences of one session are shared: concurrent callers wait for the one in
// flight, and after it was answered Fence returns nil at once. A kill whose
// connection fails is sent again on a fresh fence connection (fenceAttempts
// in all; killing twice is harmless). A caller whose ctx ends first gets an
// Uncertain *Error while the fence goes on for the others. Without an
// identity it sends nothing and returns ErrNoIdentity (NotSubmitted); a
// server error reply (NOPERM) is Definite. It blocks until the reply, at
// most until ctx ends. Safe for concurrent use.
func (e *Engine) Fence(ctx context.Context, fenced Session) error {
	s, ok := fenced.(*session)
	if !ok || s == nil || s.e != e {
		return &Error{Class: NotSubmitted, Op: "fence", Err: ErrForeignSession}
	}
	if s.demoted.Load() || !e.IsPrimary(s.node) {
		// Nothing s still carries can reach the primary's data: its server is
		// not the primary any more; Sentinel kills its clients when it
		// reconfigures it.
		s.demoted.Store(true)
		e.retireSession(s, RetiredDemoted)
		return nil
	}
	id, ok := s.Identity()
	if !ok {
		e.retireSession(s, RetiredFenced)
		return &Error{Class: NotSubmitted, Op: "fence", Addr: s.node, Session: s, Err: ErrNoIdentity}
	}
	for {
		call, leader := s.joinFence()
		if leader {
			call.err = e.sendFence(ctx, s, id)
			s.endFence(call)
			return call.err
		}
		if err := e.spawn.Wait(ctx, call.done); err != nil {
			return &Error{Class: Uncertain, Op: "fence", Addr: s.node, Session: s, Err: err}
		}
		if call.err == nil || ctx.Err() != nil {
			return call.err
		}
		// the shared fence failed; ours may still succeed
	}
}

// Fenced reports whether a fence of s was answered: nothing s carried can
// run any more. It does not block.
func (s *session) Fenced() bool {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	return s.fence != nil && s.fenceAnswered
}

// joinFence returns the fence call to wait for, or a new one the caller
// must send (leader).
func (s *session) joinFence() (call *killCall, leader bool) {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	if s.fence != nil {
		select {
		case <-s.fence.done:
			if s.fence.err == nil {
				return s.fence, false
			}
		default:
			return s.fence, false
		}
	}
	s.fence = &killCall{done: make(chan struct{})}
	return s.fence, true
}

func (s *session) endFence(call *killCall) {
	s.fenceMu.Lock()
	s.fenceAnswered = s.fenceAnswered || call.err == nil
	s.fenceMu.Unlock()
	close(call.done)
}

// sendFence sends the kill on node's fence connection, again on a fresh
// one when the connection fails, while ctx lasts; each attempt is bounded
// by fenceBound when ctx has no deadline. s is closed once the kill was
// answered or given up; a drainer's batch in flight on s is answered
// Uncertain once it answered.
func (e *Engine) sendFence(ctx context.Context, s *session, id Identity) error {
	s.fencing.Store(true) // a transport error its kill causes is no reason of its own
	s.link.markRetired()  // nothing new is handed to s from now on
	defer e.retireSession(s, RetiredFenced)
	var err error
	for attempt := 0; attempt < fenceAttempts; attempt++ {
		if cerr := ctx.Err(); cerr != nil {
			if err != nil {
				return err // the last attempt's failure says more than the bound's end
			}
			return &Error{Class: NotSubmitted, Op: "fence", Addr: s.node, Session: s, Err: context.Cause(ctx)}
		}
		var reply Reply
		reply, err = e.control(ctx, s.node, FenceCommand(id.ID, id.Addr))
		if err != nil {
			if ce, ok := err.(*Error); ok {
				c := *ce
				c.Session = s
				err = &c
			}
			continue
		}
		if reply.Kind == ReplyError {
			return definiteError("fence", s.node, s, newServerError(reply.Text), reply.Err)
		}
		if d := s.link.drain; d != nil {
			d.cutOff()
		}
		return nil
	}
	return err
}

// control sends one command on node's fence connection (opening one when
// there is none), bounded by fenceBound when ctx has no deadline; a
// connection that fails is retired, so the next call opens a fresh one.
func (e *Engine) control(ctx context.Context, node string, cmd Command) (Reply, error) {
	cctx, cancel := e.own(ctx, fenceBound)
	defer cancel()
	l, err := e.fenceLink(cctx, node)
	if err != nil {
		return Reply{}, err
	}
	cmds, replies := [1]Command{cmd}, [1]Reply{}
	if err := l.exchange(cctx, CommandName(cmd), cmds[:], replies[:], nil, nil); err != nil {
		return Reply{}, err
	}
	return replies[0], nil
}

// fenceLink returns node's live fence connection, opening one (once at a
// time per node) when there is none.
func (e *Engine) fenceLink(ctx context.Context, node string) (*link, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, &Error{Class: NotSubmitted, Op: "fence", Addr: node, Err: ErrPoolClosed}
	}
	if l := e.fences[node]; l != nil && !l.retired.Load() {
		e.mu.Unlock()
		return l, nil
	}
	e.mu.Unlock()
	val, err := e.opened(ctx, "fence "+node, "fence", node, func(octx context.Context) (any, error) {
		return e.openFence(octx, node)
	})
	if err != nil {
		return nil, err
	}
	return val.(*link), nil
}

// openFence dials node's fence connection and makes it node's.
func (e *Engine) openFence(ctx context.Context, node string) (*link, error) {
	e.mu.Lock()
	if l := e.fences[node]; l != nil && !l.retired.Load() {
		e.mu.Unlock()
		return l, nil
	}
	e.mu.Unlock()
	if err := e.clientClosed(); err != nil {
		return nil, &Error{Class: NotSubmitted, Op: "fence", Addr: node, Err: err}
	}
	c, err := e.client.Dial(ctx, node)
	if err != nil {
		return nil, &Error{Class: NotSubmitted, Op: "fence", Addr: node, Err: err}
	}
	// No idle PING on a fence connection: a kill must be written at once,
	// even when replies are held up; a kill that fails on a dead socket is
	// sent again on a fresh one (killing twice is harmless).
	l := e.newLink(node, c, false)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		l.retire()
		return nil, &Error{Class: NotSubmitted, Op: "fence", Addr: node, Err: ErrPoolClosed}
	}
	e.fences[node] = l
	return l, nil
}

// prepareFence opens node's fence connection ahead of need (a session to
// node just opened): a fence must not wait for a dial on a stalled network.
// A failure is left for the fence to try again.
func (e *Engine) prepareFence(node string) {
	ctx, cancel := Bound(e.clock, e.stop, openBound)
	defer cancel()
	_, _ = e.fenceLink(ctx, node)
}
