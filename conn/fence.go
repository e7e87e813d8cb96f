package conn

import (
	"context"
	"fmt"
)

// fenceAttempts bounds how often one fence is sent when the connection it
// travels on fails: CLIENT KILL ID is idempotent (a second kill of a gone
// connection answers 0), so re-sending it is safe, and rueidis replaces a
// broken pipeline connection on the next command.
const fenceAttempts = 3

// fenceCall is one CLIENT KILL of a session in flight or answered.
type fenceCall struct {
	done chan struct{} // closed when err is set
	err  error
}

// Fence kills session s's socket with CLIENT KILL ID <id> ADDR <addr>, sent
// on another connection to the same node (the ordinary client's). Once it
// answers, nothing still queued on the killed socket can run (the server
// answers the kill after the killed connection stopped running commands, and
// discards what was queued or pipelined on it; rule FenceIsFinal in
// docs/rules.md), so the outcome of every command s carried is settled: it
// ran before the kill or never will. s is marked retired before the kill is
// sent (nothing new is handed to it) and closed once it answered.
//
// Fences of one session are shared: concurrent callers wait for the one in
// flight, and after it was answered Fence returns nil at once, so the other
// handles whose commands were in flight on s cost no second kill. A fence
// whose connection fails is re-sent (fenceAttempts in all); a caller whose
// ctx ends first gets an Uncertain *Error while the fence goes on for the
// others. Without an identity it sends nothing and returns ErrNoIdentity (in
// a NotSubmitted *Error); a server error reply (e.g. NOPERM) is a Definite
// *Error. It blocks until the reply, at most until ctx ends. Safe for
// concurrent use.
func (p *Pool) Fence(ctx context.Context, session Session) error {
	s, err := pinnedOf(session)
	if err != nil {
		return err
	}
	if s.demoted.Load() || (p.sentinel && !p.IsPrimary(s.node)) {
		// Nothing s still carries can reach the primary's data: its server is
		// not the primary any more (and is not among the client's nodes to
		// send a kill to); Sentinel kills its clients when it reconfigures it.
		s.demoted.Store(true)
		p.retireFor(s, RetiredDemoted)
		return nil
	}
	id, ok := s.Identity()
	if !ok {
		p.retireFor(s, RetiredFenced)
		return &Error{Class: NotSubmitted, Op: "fence", Addr: s.node, Session: s, Err: ErrNoIdentity}
	}
	for {
		call, leader := s.joinFence()
		if leader {
			call.err = p.sendFence(ctx, s, id)
			s.endFence(call)
			return call.err
		}
		select {
		case <-call.done:
			if call.err == nil || ctx.Err() != nil {
				return call.err
			}
			// the shared fence failed; ours may still succeed
		case <-ctx.Done():
			return &Error{Class: Uncertain, Op: "fence", Addr: s.node, Session: s, Err: context.Cause(ctx)}
		}
	}
}

// Fenced reports whether a fence of s was answered: nothing s carried can
// run any more. It does not block.
func (s *pinned) Fenced() bool {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	return s.fence != nil && s.fenceAnswered
}

// joinFence returns the fence call to wait for, or a new one the caller must
// send (leader).
func (s *pinned) joinFence() (call *fenceCall, leader bool) {
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
	s.fence = &fenceCall{done: make(chan struct{})}
	return s.fence, true
}

func (s *pinned) endFence(call *fenceCall) {
	s.fenceMu.Lock()
	s.fenceAnswered = s.fenceAnswered || call.err == nil
	s.fenceMu.Unlock()
	close(call.done)
}

// sendFence sends the kill, re-sending it on a transport failure while ctx
// lasts, and closes s once the kill was answered or given up.
func (p *Pool) sendFence(ctx context.Context, s *pinned, id Identity) error {
	s.retired.Store(true) // nothing new is handed to s from now on
	defer p.retireFor(s, RetiredFenced)
	var err error
	for attempt := 0; attempt < fenceAttempts; attempt++ {
		if err = ctx.Err(); err != nil {
			return &Error{Class: NotSubmitted, Op: "fence", Addr: s.node, Session: s, Err: err}
		}
		nodeClient, ok := p.client.Nodes()[s.node]
		if !ok {
			return &Error{Class: NotSubmitted, Op: "fence", Addr: s.node, Session: s,
				Err: fmt.Errorf("%w: %s", errUnknownNode, s.node)}
		}
		p.reportCommand(ctx, "CLIENT KILL")
		result := nodeClient.Do(ctx, buildCommand(nodeClient.B(), FenceCommand(id.ID, id.Addr)))
		if transport := result.NonRedisError(); transport != nil {
			err = &Error{Class: ClassifyTransport(transport), Op: "fence", Addr: s.node, Session: s, Err: transport}
			continue
		}
		reply, redisErr := toReply(result)
		if reply.Kind == ReplyError {
			return definite("fence", s.node, s, newServerError(reply.Text), redisErr)
		}
		return nil
	}
	return err
}

// ProbeKill checks that this session's user may run CLIENT KILL by sending
// CLIENT KILL ID <own id> SKIPME yes on the session itself (kills nothing,
// answers :0). nil means permitted. Without an identity it returns
// ErrNoIdentity (NotSubmitted) and sends nothing. It blocks until the reply.
func (s *pinned) ProbeKill(ctx context.Context) error {
	id, ok := s.Identity()
	if !ok {
		return &Error{Class: NotSubmitted, Op: "probe", Addr: s.node, Session: s, Err: ErrNoIdentity}
	}
	reply, redisErr, err := s.exchange(ctx, "probe", ProbeKillCommand(id.ID), false, nil)
	if err != nil {
		return err
	}
	if reply.Kind == ReplyError {
		return definite("probe", s.node, s, newServerError(reply.Text), redisErr)
	}
	return nil
}
