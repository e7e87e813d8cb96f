//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"

	"github.com/respire-go/respire/conn"
)

// Do implements conn.Transport as conn.Pool.Do does: op runs on the session
// of its key's primary; MOVED is re-sent on the node it names (go-redis is
// told to reload its slot map), ASK with ASKING first; a command refused
// by a session found dead before the hand-off is sent once more per hop on
// a fresh session. route is told each session right before its hand-off.
// It blocks until a definite answer or an error; an Uncertain command is
// never replayed.
func (t *Transport) Do(ctx context.Context, op conn.Op, route *conn.Route) (conn.Result, error) {
	if lease, counter, ok := op.FencedKeys(); ok {
		if err := t.CheckFencedKeys(lease, counter); err != nil {
			return conn.Result{}, err
		}
	}
	if err := op.Invalid(); err != nil {
		return conn.Result{}, err
	}
	node, err := t.route(ctx, op.Name(), op.Key())
	if err != nil {
		return conn.Result{}, err
	}
	asking := false
	for hop := 0; ; hop++ {
		s, err := t.sessionFor(ctx, node)
		if err != nil {
			return conn.Result{}, err
		}
		res, err := s.run(ctx, op, asking, route)
		var e *conn.Error
		if err == nil || !errors.As(err, &e) || hop >= maxRedirects {
			return res, err
		}
		if conn.RetriableOnFreshSession(err) {
			if t.mode == modeSentinel {
				node, _ = t.route(ctx, op.Name(), op.Key())
			}
			continue
		}
		if e.Redirect == nil {
			return res, err
		}
		node, asking = e.Redirect.Addr, e.Redirect.Ask
	}
}

// Do implements conn.Session: op on this session only, through its
// fallback steps; a redirect is a Definite *conn.Error with Redirect set
// (the session is then retired).
func (s *session) Do(ctx context.Context, op conn.Op, route *conn.Route) (conn.Result, error) {
	if lease, counter, ok := op.FencedKeys(); ok {
		if err := s.t.CheckFencedKeys(lease, counter); err != nil {
			return conn.Result{}, err
		}
	}
	if err := op.Invalid(); err != nil {
		return conn.Result{}, err
	}
	return s.run(ctx, op, false, route)
}

// run drives op's state machine on this session (after ASKING when
// asking), one exchange per step.
func (s *session) run(ctx context.Context, op conn.Op, asking bool, route *conn.Route) (conn.Result, error) {
	name := op.Name()
	if o, ok := op.Operation(s.caps.Load()); ok {
		return s.driveAsking(ctx, name, &o, asking, route)
	}
	_, fenced, script := op.Machine(s.caps.Load())
	for {
		var cmd conn.Command
		if fenced != nil {
			cmd = fenced.Command()
		} else {
			cmd = script.Command()
		}
		r, err := s.step(ctx, name, newWireCmd(ctx, cmd.Args), asking, route)
		if err != nil {
			return conn.Result{Session: s}, err
		}
		var res conn.Result
		var done bool
		if fenced != nil {
			res, done, err = s.interpretFenced(name, fenced, r)
		} else {
			res, done, err = s.interpretScript(name, script, r)
		}
		if done {
			return res, err
		}
	}
}

// driveAsking finishes an Operation from its current step on this session
// (after ASKING when asking), its commands built straight into go-redis'.
func (s *session) driveAsking(ctx context.Context, op string, o *conn.Operation, asking bool, route *conn.Route) (conn.Result, error) {
	for {
		r, err := s.step(ctx, op, opWireCmd(ctx, o), asking, route)
		if err != nil {
			return conn.Result{Session: s}, err
		}
		if res, done, err := s.interpret(op, o, r); done {
			return res, err
		}
	}
}

// step exchanges one command (after ASKING when asking) and returns its
// result; on Sentinel a reply from a node that stopped being the primary
// proves nothing (Uncertain, conn.ErrNotPrimary).
func (s *session) step(ctx context.Context, op string, wc *wireCmd, asking bool, route *conn.Route) (result, error) {
	var r result
	var err error
	if asking {
		var results []result
		results, err = s.exchange(ctx, op, []conn.Command{conn.AskingCommand(), wc.command()}, route)
		if err == nil {
			r = results[1]
		}
	} else {
		r, err = s.exchangeOne(ctx, op, wc, route)
	}
	if err != nil {
		return result{}, err
	}
	if err := s.checkPrimary(op); err != nil {
		return result{}, err
	}
	return r, nil
}

// checkPrimary demotes and retires a Sentinel session whose node is no
// longer the master, and returns the Uncertain error of its reply.
func (s *session) checkPrimary(op string) error {
	if s.t.mode != modeSentinel || s.t.IsPrimary(s.node) {
		return nil
	}
	s.demoted.Store(true)
	s.t.retireFor(s, conn.RetiredDemoted)
	return &conn.Error{Class: conn.Uncertain, Op: op, Addr: s.node, Session: s, Err: conn.ErrNotPrimary}
}

// interpret consumes a reply of an acquisition, extension, release or
// owner query; done false means the next fallback step is due.
func (s *session) interpret(op string, o *conn.Operation, r result) (conn.Result, bool, error) {
	step := o.Step()
	out := o.Interpret(r.reply)
	s.learn(step, out)
	if !out.Done {
		return conn.Result{}, false, nil
	}
	if out.Redirect != nil || out.Err != nil {
		res, err := s.finishError(op, out.Redirect, out.Err, r.server)
		return res, true, err
	}
	return conn.Result{Owned: out.Owned, Token: out.Value, Session: s}, true, nil
}

// interpretFenced consumes a reply of the fenced acquisition script.
func (s *session) interpretFenced(op string, f *conn.FencedAcquire, r result) (conn.Result, bool, error) {
	out := f.Interpret(r.reply)
	switch {
	case !out.Done:
		s.scriptNotCached()
		return conn.Result{}, false, nil // NOSCRIPT: the script did not run; EVAL it
	case out.Redirect != nil || out.Err != nil:
		res, err := s.finishError(op, out.Redirect, out.Err, r.server)
		return res, true, err
	case out.Malformed != nil:
		return conn.Result{Session: s}, true, &conn.Error{Class: conn.Definite, Op: op, Addr: s.node, Session: s,
			Code: "PROTOCOL", Err: out.Malformed}
	}
	return conn.Result{Owned: out.Acquired, FencingToken: out.FencingToken, Session: s}, true, nil
}

// interpretScript consumes a reply of a semaphore or read/write-lock
// script.
func (s *session) interpretScript(op string, c *conn.ScriptCall, r result) (conn.Result, bool, error) {
	out := c.Interpret(r.reply)
	switch {
	case !out.Done:
		s.scriptNotCached()
		return conn.Result{}, false, nil
	case out.LimitMismatch != nil:
		if r.server != nil {
			out.LimitMismatch.Reply = r.server
		}
		return conn.Result{Session: s}, true, &conn.Error{Class: conn.Definite, Op: op, Addr: s.node, Session: s,
			Code: conn.LimitMismatchCode, Err: out.LimitMismatch}
	case out.Redirect != nil || out.Err != nil:
		res, err := s.finishError(op, out.Redirect, out.Err, r.server)
		return res, true, err
	}
	return conn.Result{Owned: out.Owned, Waiting: out.Waiting, RemainingMillis: out.RemainingMillis,
		Holders: out.Holders, Session: s}, true, nil
}

// finishError builds the Definite error of a redirect or an error reply:
// a redirect or READONLY retires the session, a reply saying the cluster
// cannot serve now makes go-redis reload its slot map.
func (s *session) finishError(op string, rd *conn.Redirect, se *conn.ServerError, server error) (conn.Result, error) {
	e := &conn.Error{Class: conn.Definite, Op: op, Addr: s.node, Session: s, Err: server}
	if se != nil {
		e.Code = se.Code
		if e.Err == nil {
			e.Err = se
		}
	}
	if rd != nil {
		s.t.retireFor(s, conn.RetiredRedirect)
		s.t.reload(context.Background())
		if se == nil {
			e.Code = "MOVED"
			if rd.Ask {
				e.Code = "ASK"
			} else {
				s.t.slotMoved(s.node)
			}
		}
		e.Redirect = rd
	} else if se != nil {
		if conn.IsReadOnlyReply(se.Message) {
			s.t.retireFor(s, conn.RetiredReadOnly)
		}
		if conn.IsDidNotRunReply(se.Message) {
			s.t.reload(context.Background())
		}
	}
	if e.Err == nil {
		e.Err = conn.ErrServerReply
	}
	return conn.Result{Session: s}, e
}
