//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"

	"github.com/respire-go/respire/conn"
)

// ExtendMany implements conn.Session: many renewals in one pipelined round
// trip — compare-and-pexpires and holders' renewal scripts alike (see
// conn.ExtendRequest.Op); a request whose first step needs a fallback (a
// script not cached yet included) finishes on its own afterwards. Results
// are in request order; a request whose Route aborts is not sent
// (NotSubmitted, conn.ErrAborted), nor one whose Op is not a renewal
// (conn.ErrNotBatchable).
func (s *session) ExtendMany(ctx context.Context, requests []conn.ExtendRequest) []conn.ExtendResult {
	results := make([]conn.ExtendResult, len(requests))
	ops := make([]*conn.Operation, len(requests))
	var scripts []*conn.ScriptCall // allocated with the batch's first holder renewal
	cmds := make([]conn.Command, 0, len(requests))
	caps := s.caps.Load()
	for i, r := range requests {
		op := r.Renewal()
		if err := s.unsendable(ctx, r, op); err != nil {
			results[i] = conn.ExtendResult{Result: conn.Result{Session: s}, Err: s.notSent(op.Name(), err)}
			continue
		}
		o, _, script := op.Machine(caps)
		if script != nil {
			if scripts == nil {
				scripts = make([]*conn.ScriptCall, len(requests))
			}
			scripts[i] = script
			cmds = append(cmds, script.Command())
			continue
		}
		ops[i] = o
		cmds = append(cmds, o.Command())
	}
	if len(cmds) == 0 {
		return results
	}
	replies, err := s.submit(ctx, "extend", cmds, nil, false)
	if err == nil {
		err = s.checkPrimary("extend")
	}
	next := 0
	for i, r := range requests {
		if ops[i] == nil && (scripts == nil || scripts[i] == nil) {
			continue
		}
		if err != nil {
			results[i] = conn.ExtendResult{Result: conn.Result{Session: s}, Err: err}
			continue
		}
		results[i] = s.finishPipelined(ctx, r, ops[i], scripts, i, replies[next])
		next++
	}
	return results
}

// unsendable returns why request r (sending op) is left out of a batch: the
// session retired, ctx ended, its Route aborted it, or op is no renewal.
func (s *session) unsendable(ctx context.Context, r conn.ExtendRequest, op conn.Op) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case s.retired.Load():
		return conn.ErrSessionRetired
	case !op.Batchable():
		return conn.ErrNotBatchable
	case op.Invalid() != nil:
		return op.Invalid()
	case !r.Route.Carry(s):
		return conn.ErrAborted
	}
	return nil
}

// finishPipelined reads request i's reply from a batch: a compare-and-
// pexpire (o) or a holder renewal (scripts[i]), either finished on its own
// when its first step needs a fallback.
func (s *session) finishPipelined(ctx context.Context, r conn.ExtendRequest, o *conn.Operation, scripts []*conn.ScriptCall,
	i int, reply result) conn.ExtendResult {
	if o != nil {
		res, done, e := s.interpret("extend", o, reply)
		if !done {
			res, e = s.drive(ctx, "extend", o, r.Route)
		}
		return conn.ExtendResult{Result: res, Err: e}
	}
	name := r.Op.Name()
	res, done, e := s.interpretScript(name, scripts[i], reply)
	for !done {
		var next result
		if next, e = s.step(ctx, name, newWireCmd(ctx, scripts[i].Command().Args), false, r.Route); e != nil {
			return conn.ExtendResult{Result: conn.Result{Session: s}, Err: e}
		}
		res, done, e = s.interpretScript(name, scripts[i], next)
	}
	return conn.ExtendResult{Result: res, Err: e}
}

// drive finishes an Operation from its current step on this session.
func (s *session) drive(ctx context.Context, op string, o *conn.Operation, route *conn.Route) (conn.Result, error) {
	return s.driveAsking(ctx, op, o, false, route)
}

// ProbeKill implements conn.Session: CLIENT KILL ID <own id> SKIPME yes on
// the session itself (kills nothing, answers :0); nil means permitted.
func (s *session) ProbeKill(ctx context.Context) error {
	id, ok := s.Identity()
	if !ok {
		return &conn.Error{Class: conn.NotSubmitted, Op: "probe", Addr: s.node, Session: s, Err: conn.ErrNoIdentity}
	}
	r, err := s.exchangeOne(ctx, "probe", newWireCmd(ctx, conn.ProbeKillCommand(id.ID).Args), nil)
	if err != nil {
		return err
	}
	if r.reply.Kind == conn.ReplyError {
		return definite("probe", s, r)
	}
	return nil
}

// definite is the Definite *conn.Error of an error reply.
func definite(op string, s *session, r result) *conn.Error {
	e := &conn.Error{Class: conn.Definite, Op: op, Err: r.server}
	if s != nil {
		e.Addr, e.Session = s.node, s
	}
	if se, ok := r.server.(*serverError); ok {
		e.Code = se.Code()
	}
	if e.Err == nil {
		e.Err = conn.ErrServerReply
	}
	return e
}

// fenceAttempts bounds how often one fence is sent when its connection
// fails (CLIENT KILL ID is idempotent).
const fenceAttempts = 3

// fenceCall is one CLIENT KILL of a session in flight or answered.
type fenceCall struct {
	done chan struct{}
	err  error
}

// Fence implements conn.Transport as conn.Pool.Fence does: s is retired,
// then killed with CLIENT KILL ID <id> ADDR <addr> sent on another Conn of
// its node, which answers once the killed connection stopped running
// commands and what was queued on it was discarded (rule FenceIsFinal).
// Fences of one session are shared; a failed fence connection is
// replaced (fenceAttempts in all); a caller whose ctx ends first gets an
// Uncertain error while the fence goes on for the others. In Sentinel mode
// a session whose node is no longer the master needs no kill (its data is
// not the primary's): it is demoted and nil returned. Without identity:
// conn.ErrNoIdentity, NotSubmitted.
func (t *Transport) Fence(ctx context.Context, cs conn.Session) error {
	s, ok := cs.(*session)
	if !ok || s == nil || s.t != t {
		return &conn.Error{Class: conn.NotSubmitted, Op: "fence", Err: conn.ErrForeignSession}
	}
	if s.demoted.Load() || (t.mode == modeSentinel && !t.IsPrimary(s.node)) {
		s.demoted.Store(true)
		t.retireFor(s, conn.RetiredDemoted)
		return nil
	}
	id, ok := s.Identity()
	if !ok {
		t.retireFor(s, conn.RetiredFenced)
		return &conn.Error{Class: conn.NotSubmitted, Op: "fence", Addr: s.node, Session: s, Err: conn.ErrNoIdentity}
	}
	for {
		call, leader := s.joinFence()
		if leader {
			call.err = t.sendFence(ctx, s, id)
			s.endFence(call)
			return call.err
		}
		select {
		case <-call.done:
			if call.err == nil || ctx.Err() != nil {
				return call.err
			}
		case <-ctx.Done():
			return &conn.Error{Class: conn.Uncertain, Op: "fence", Addr: s.node, Session: s, Err: context.Cause(ctx)}
		}
	}
}

func (s *session) joinFence() (*fenceCall, bool) {
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

func (s *session) endFence(call *fenceCall) {
	s.fenceMu.Lock()
	s.fenceAnswered = s.fenceAnswered || call.err == nil
	s.fenceMu.Unlock()
	close(call.done)
}

// Fenced reports whether a fence of s was answered.
func (s *session) Fenced() bool {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	return s.fence != nil && s.fenceAnswered
}

// sendFence sends the kill on a fresh Conn of s's node (with the witness,
// so no hook can fake its answer), pipelined behind CLIENT INFO in
// Sentinel mode: a kill that reached another node than s's proves the
// master moved (s is then demoted, nothing to kill).
func (t *Transport) sendFence(ctx context.Context, s *session, id conn.Identity) error {
	t.unlist(s)
	if s.markRetired(conn.RetiredFenced) {
		defer t.reportRetired(s.node, conn.RetiredFenced)
	}
	var err error
	for attempt := 0; attempt < fenceAttempts; attempt++ {
		if e := ctx.Err(); e != nil {
			return &conn.Error{Class: conn.NotSubmitted, Op: "fence", Addr: s.node, Session: s, Err: e}
		}
		var results []result
		var laddr string
		results, laddr, err = t.control(ctx, s.node, conn.FenceCommand(id.ID, id.Addr))
		if err != nil {
			continue
		}
		if t.mode == modeSentinel && laddr != s.node {
			s.demoted.Store(true)
			return nil
		}
		if r := results[0]; r.reply.Kind == conn.ReplyError {
			return definite("fence", s, r)
		}
		s.cutOff()
		return nil
	}
	var e *conn.Error
	if errors.As(err, &e) {
		e.Op, e.Session = "fence", s
		return e
	}
	return &conn.Error{Class: conn.Uncertain, Op: "fence", Addr: s.node, Session: s, Err: err}
}
