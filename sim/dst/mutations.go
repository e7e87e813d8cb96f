package dst

import (
	"slices"
	"strconv"
	"strings"

	"github.com/respire-go/respire/conn"
)

// This file holds the deliberate breakages of Options.Mutation. They live
// where the simulation stands in for something real — the client library
// under the engine (a client that makes up replies, answers a fence
// itself, or claims a command in flight was never written) and the wire
// (commands rewritten on their way) — so that each proves the checker
// catches a wrong wire under the shipped engine and driver. The engine's
// own mutation is a build tag of package conn (respire_mutation_errclosing),
// the driver's one of package actor (respire_mutation_renewal).

// mutateCommand returns the command the (broken) client writes for cmd:
// MutationRenewWithoutCompare renews with PEXPIRE, the primitives'
// mutations send broken scripts. cmd itself is never changed.
func (w *world) mutateCommand(cmd conn.Command) conn.Command {
	fam := family(cmd)
	switch w.opt.Mutation {
	case MutationRenewWithoutCompare:
		if fam == "extend" {
			return conn.Command{Args: []string{"PEXPIRE", routingKey(cmd.Args), cmd.Args[len(cmd.Args)-1]}, Key: 1}
		}
	case MutationWriterIgnoresReaders:
		if isScript(cmd, conn.WriteAcquireScriptSHA, conn.WriteAcquireScript) {
			cmd.Args = slices.Clone(cmd.Args)
			cmd.Args[4] = strings.TrimSuffix(cmd.Args[4], ":r") + ":nobody"
		}
	case MutationReaderIgnoresWriter:
		if isScript(cmd, conn.ReadAcquireScriptSHA, conn.ReadAcquireScript) {
			cmd.Args = slices.Clone(cmd.Args)
			cmd.Args[0], cmd.Args[1] = "EVAL", readerIgnoringWriter
		}
	case MutationSemaphoreCountsEnded:
		if isScript(cmd, conn.SemaphoreAcquireScriptSHA, conn.SemaphoreAcquireScript) {
			cmd.Args = slices.Clone(cmd.Args)
			cmd.Args[0], cmd.Args[1] = "EVAL", countingEnded
		}
	}
	return cmd
}

// mutateReply is the reply the client hands the engine for r: the
// server's, except that a fenced acquisition's token is remembered for
// invariant 6 and, under MutationReuseFencingToken, replaced by the
// process's stale view of its counter (its last token + 1).
func (w *world) mutateReply(p *process, r *request, reply conn.Reply) conn.Reply {
	if !isFencedCommand(r.cmd) || reply.Kind != conn.ReplyBulk {
		return reply
	}
	token, ok := conn.ParseFencingToken(reply.Text)
	if !ok {
		return reply
	}
	counter := r.cmd.Args[4]
	if w.opt.Mutation == MutationReuseFencingToken {
		token = p.lastFencingToken[counter] + 1
		reply.Text = strconv.FormatInt(token, 10)
	}
	p.lastFencingToken[counter] = token
	w.check.scriptRunOf[tokenOf(r.cmd)] = r.scriptRun
	w.trace.logf(w, p, "", "fencing token %d handed to the engine (script run #%d)", token, r.scriptRun)
	return reply
}

// mutateFallback is MutationFallbackAfterTimeout, a client that makes up
// a reply: when the caller stopped waiting before the reply to a fallback
// ladder's step came, it hands the engine that step's confirming error
// reply, so the engine sends the next step while the first may still
// run. It reports whether it did.
func (w *world) mutateFallback(s *simConn, cmds []conn.Command, x *pending) bool {
	last := len(cmds) - 1
	if w.opt.Mutation != MutationFallbackAfterTimeout || x.got != last || x.lost != nil {
		return false
	}
	cmd := cmds[last]
	var fake string
	switch name := strings.ToUpper(cmd.Args[0]); {
	case name == "SET" && family(cmd) == "extend":
		fake = "ERR syntax error"
	case name == "DELEX" || name == "DELIFEQ":
		fake = "ERR unknown command '" + name + "', with args beginning with: "
	case name == "EVALSHA" && (family(cmd) == "extend" || family(cmd) == "release"):
		fake = "NOSCRIPT No matching script."
	default:
		return false
	}
	x.replies[last] = conn.Reply{Kind: conn.ReplyError, Text: fake}
	x.over = true // the real reply is dropped when it comes
	w.trace.logf(w, s.p, "", "mutation: the client answers %s with %q itself", cmd.Args[0], fake)
	return true
}

// fakeFence is MutationSkipFence, a client that answers a fence itself:
// a lone CLIENT KILL ID … ADDR … is not sent, and its victim counts as
// fenced although it was not killed. It reports whether it did.
func (s *simConn) fakeFence(cmds []conn.Command, replies []conn.Reply) bool {
	w := s.w
	if w.opt.Mutation != MutationSkipFence || len(cmds) != 1 || !isFenceCommand(cmds[0]) {
		return false
	}
	if victim := w.fenceVictim(s.c, cmds[0]); victim != nil {
		w.check.onFenced(w, victim)
	}
	replies[0] = conn.Reply{Kind: conn.ReplyInt, Int: 1}
	w.trace.logf(w, s.p, "", "mutation: the client answers a fence itself")
	return true
}

// isFenceCommand reports whether cmd is CLIENT KILL ID <id> ADDR <addr>.
func isFenceCommand(cmd conn.Command) bool {
	a := cmd.Args
	return len(a) >= 6 && strings.EqualFold(a[0], "CLIENT") && strings.EqualFold(a[1], "KILL") &&
		strings.EqualFold(a[2], "ID") && strings.EqualFold(a[4], "ADDR")
}

// fenceVictim is the connection a fence sent on c names: the one of c's
// node and server generation with the fence's ADDR (nil when none).
func (w *world) fenceVictim(c *connection, fence conn.Command) *connection {
	addr := fence.Args[5]
	for _, v := range w.conns {
		if v.node == c.node && v.generation == c.generation && v.addr == addr {
			return v
		}
	}
	return nil
}

// noteFence is told every reply a client reads: an answered fence seals
// its victim for the checker (invariant 5: nothing it carried runs from
// then on).
func (w *world) noteFence(c *connection, r *request, reply conn.Reply) {
	if !isFenceCommand(r.cmd) || reply.Kind == conn.ReplyError {
		return
	}
	w.stats.Fences++
	if victim := w.fenceVictim(c, r.cmd); victim != nil {
		w.fencedWithQueue(victim)
		w.check.onFenced(w, victim)
	}
}
