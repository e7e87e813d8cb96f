package dst

import (
	"context"

	"github.com/respire-go/respire/conn"
)

// This file runs the semaphore's and the read/write lock's scripts
// (conn.ScriptCall: EVALSHA, then EVAL after NOSCRIPT) on a simulated
// session, as conn's session (driveScript) and goredis' do.

// runScript drives call, op's script call, from its current step on this
// session (after ASKING when asking).
func (s *simSession) runScript(ctx context.Context, op conn.Op, call *conn.ScriptCall, asking bool, route *conn.Route,
	rec *opRun) (conn.Result, error) {
	name := op.Name()
	if rec.token == "" {
		rec.token = tokenOf(call.Command())
	}
	for {
		cmd := s.t.w.scriptCommand(call)
		cmds, recs := []conn.Command{cmd}, []*opRun{rec}
		if asking {
			cmds, recs = []conn.Command{conn.AskingCommand(), cmd}, []*opRun{nil, rec}
		}
		replies, err := s.exchange(ctx, recs, name, cmds, route)
		if err != nil {
			return conn.Result{Session: s}, err
		}
		res, done, err := s.interpretScript(name, call, replies[len(replies)-1])
		if done {
			return res, err
		}
		s.t.w.stats.Fallbacks++
	}
}

// interpretScript consumes a reply of a semaphore or read/write-lock
// script; done false means NOSCRIPT (the script did not run: EVAL it).
func (s *simSession) interpretScript(name string, call *conn.ScriptCall, r conn.Reply) (conn.Result, bool, error) {
	out := call.Interpret(r)
	switch {
	case !out.Done:
		return conn.Result{}, false, nil
	case out.LimitMismatch != nil:
		return conn.Result{Session: s}, true, &conn.Error{Class: conn.Definite, Op: name, Addr: s.node.addr, Session: s,
			Code: conn.LimitMismatchCode, Err: out.LimitMismatch}
	case out.Redirect != nil || out.Err != nil:
		res, err := s.finishError(name, call.Command(), out.Redirect, out.Err)
		return res, true, err
	}
	return conn.Result{Owned: out.Owned, Waiting: out.Waiting, RemainingMillis: out.RemainingMillis,
		Holders: out.Holders, Session: s}, true, nil
}

// driveScript finishes a renewal script of a batch from its current step
// (after NOSCRIPT) on this session.
func (s *simSession) driveScript(ctx context.Context, name string, call *conn.ScriptCall, route *conn.Route,
	rec *opRun) (conn.Result, error) {
	for {
		replies, err := s.exchange(ctx, []*opRun{rec}, name, []conn.Command{s.t.w.scriptCommand(call)}, route)
		if err != nil {
			return conn.Result{Session: s}, err
		}
		if res, done, err := s.interpretScript(name, call, replies[0]); done {
			return res, err
		}
		s.t.w.stats.Fallbacks++
	}
}

// scriptCommand is call's current command. (A mutation of the primitives
// would rewrite it here; there is none: the semaphore's is conn's build
// tag respire_mutation_semlimit.)
func (w *world) scriptCommand(call *conn.ScriptCall) conn.Command { return call.Command() }
