package dst

import (
	"context"
	"strings"

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

// scriptCommand is call's current command, rewritten by the primitives'
// mutations (the semaphore's over-limit mutation is conn's build tag
// respire_mutation_semlimit instead).
func (w *world) scriptCommand(call *conn.ScriptCall) conn.Command {
	cmd := call.Command()
	switch w.opt.Mutation {
	case MutationWriterIgnoresReaders:
		if isScript(cmd, conn.WriteAcquireScriptSHA, conn.WriteAcquireScript) {
			cmd.Args[4] = strings.TrimSuffix(cmd.Args[4], ":r") + ":nobody"
		}
	case MutationReaderIgnoresWriter:
		if isScript(cmd, conn.ReadAcquireScriptSHA, conn.ReadAcquireScript) {
			cmd.Args[0], cmd.Args[1] = "EVAL", readerIgnoringWriter
		}
	case MutationSemaphoreCountsEnded:
		if isScript(cmd, conn.SemaphoreAcquireScriptSHA, conn.SemaphoreAcquireScript) {
			cmd.Args[0], cmd.Args[1] = "EVAL", countingEnded
		}
	}
	return cmd
}

// countingEnded is SemaphoreAcquireScript broken: it counts every holder,
// ended leases included, and removes none.
var countingEnded = mustRewrite(conn.SemaphoreAcquireScript,
	"redis.call('zcount', KEYS[1], '(' .. now, '+inf')", "redis.call('zcount', KEYS[1], 0, '+inf')",
	"redis.call('zremrangebyscore', KEYS[1], 0, now)\n", "",
)

// readerIgnoringWriter is ReadAcquireScript broken: it never looks at the
// writer key.
var readerIgnoringWriter = mustRewrite(conn.ReadAcquireScript, "if writer then return 0 end\n", "")

// mustRewrite replaces each old with its new (pairs) in script, and panics
// when one of them is not there: a mutation that no longer changes its
// script would be "caught" by nothing.
func mustRewrite(script string, oldnew ...string) string {
	for i := 0; i+1 < len(oldnew); i += 2 {
		if !strings.Contains(script, oldnew[i]) {
			panic("dst: mutation rewrite: the script no longer contains " + oldnew[i])
		}
		script = strings.ReplaceAll(script, oldnew[i], oldnew[i+1])
	}
	return script
}

// isScript reports whether cmd runs the script of sha (EVALSHA) or src
// (EVAL).
func isScript(cmd conn.Command, sha, src string) bool {
	return len(cmd.Args) > 1 && (cmd.Args[0] == "EVALSHA" && cmd.Args[1] == sha || cmd.Args[0] == "EVAL" && cmd.Args[1] == src)
}
