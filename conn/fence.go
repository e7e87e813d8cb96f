package conn

import (
	"context"
	"fmt"
)

// Fence kills session s's socket with CLIENT KILL ID <id> ADDR <addr>, sent
// on another connection to the same node (the ordinary client's). Once it
// answers, nothing still queued on the killed socket can run. It blocks until
// the reply. Once the command was handed off, s is retired locally whatever
// the outcome. Without an identity it sends nothing and returns ErrNoIdentity
// (in a NotSubmitted *Error); a server error reply (e.g. NOPERM) is a
// Definite *Error. ctx cancellation after hand-off makes the fence's own
// outcome Uncertain, so callers that need the guarantee should pass a context
// that is not cancelled. Safe for concurrent use.
func (p *Pool) Fence(ctx context.Context, s *Session) error {
	id, ok := s.Identity()
	if !ok {
		return &Error{Class: NotSubmitted, Op: "fence", Addr: s.node, Session: s, Err: ErrNoIdentity}
	}
	nodeClient, ok := p.client.Nodes()[s.node]
	if !ok {
		return &Error{Class: NotSubmitted, Op: "fence", Addr: s.node, Session: s,
			Err: fmt.Errorf("conn: node %s is not known to the client", s.node)}
	}
	if err := ctx.Err(); err != nil {
		return &Error{Class: NotSubmitted, Op: "fence", Addr: s.node, Session: s, Err: err}
	}
	result := nodeClient.Do(ctx, buildCommand(nodeClient.B(), FenceCommand(id.ID, id.Addr)))
	p.retire(s) // whatever the fence's outcome, nothing more is sent on s
	if err := result.NonRedisError(); err != nil {
		return &Error{Class: classifyTransport(err), Op: "fence", Addr: s.node, Session: s, Err: err}
	}
	reply, redisErr := toReply(result)
	if reply.Kind == ReplyError {
		return definite("fence", s.node, s, newServerError(reply.Text), redisErr)
	}
	return nil
}

// ProbeKill checks that this session's user may run CLIENT KILL by sending
// CLIENT KILL ID <own id> SKIPME yes on the session itself (kills nothing,
// answers :0). nil means permitted. Without an identity it returns
// ErrNoIdentity (NotSubmitted) and sends nothing. It blocks until the reply.
func (s *Session) ProbeKill(ctx context.Context) error {
	id, ok := s.Identity()
	if !ok {
		return &Error{Class: NotSubmitted, Op: "probe", Addr: s.node, Session: s, Err: ErrNoIdentity}
	}
	reply, redisErr, err := s.exchange(ctx, "probe", ProbeKillCommand(id.ID), false)
	if err != nil {
		return err
	}
	if reply.Kind == ReplyError {
		return definite("probe", s.node, s, newServerError(reply.Text), redisErr)
	}
	return nil
}
