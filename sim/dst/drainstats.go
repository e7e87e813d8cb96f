package dst

import (
	"context"

	"github.com/respire-go/respire/conn"
)

// This file counts what the engine's session drainer did on a per-caller
// writer's sessions (Options.PerCallerWriter: rueidis' and valkey-go's
// kind), the Stats that show a campaign ran that path: lock commands
// handed to a session while a round trip was on its wire (they wait in the
// drainer's queue: a Do on a drained session means the drainer is busy),
// the pipelines the drainer wrote with them (under a ctx of its own, which
// carries no operation: a caller's own send carries its operation's),
// round trips that ended without every reply while commands were queued
// behind them, and fences answered while the session had a drained batch
// on the wire or commands queued behind a round trip. It also tells which
// connections the engine must give one Do at a time (invariant 0).

// perCallerSession reports whether s is a dialled connection of a
// per-caller writer: a session, which the engine drains, once a lock
// operation's command was handed to it (lockHandedOff); a fence connection
// or a redirected watcher's reader never gets one.
func (s *simConn) perCallerSession() bool { return s.c.role == "conn" && s.WritesPerCaller() }

// oneAtATime reports whether the engine must give s one Do at a time: a
// non-pipelined connection, and a per-caller writer's session, whose
// drainer owns the connection for one round trip at a time (a fence
// connection is not drained: its fences may overlap).
func (s *simConn) oneAtATime() bool { return !s.pipelined || s.session && s.perCallerSession() }

// kind names s's kind in a violation.
func (s *simConn) kind() string {
	if !s.pipelined {
		return "non-pipelined"
	}
	return "per-caller writer's session"
}

// lockHandedOff is told that the engine hands a lock operation's command
// to s: s carries a session (a watcher's reader carries no operation's
// command, a fence connection none at all, and the connections of a
// replicated acquisition or a guard's confirmation one exchange at a
// time).
func (s *simConn) lockHandedOff() {
	s.session = true
	if s.rounds > 0 && s.perCallerSession() {
		s.queuedBehind++
		s.w.stats.PerCallerQueued++
	}
}

// wrotePipeline is told that s wrote x's commands under ctx: a drainer's
// batch when s is drained, ctx carries no operation and some command
// belongs to one.
func (s *simConn) wrotePipeline(ctx context.Context, ops []*opRun) {
	if !s.perCallerSession() || len(opsOf(ctx)) > 0 {
		return
	}
	var first *opRun
	shared := false
	for _, op := range ops {
		if op == nil {
			continue
		}
		if first == nil {
			first = op
		} else if op != first {
			shared = true
		}
	}
	if first == nil {
		return
	}
	s.drainedInFlight, s.queuedBehind = true, 0
	s.w.stats.PerCallerBatches++
	if shared {
		s.w.stats.PerCallerShared++
	}
}

// roundTripEnded is told that a Do on s returned with err (nil: every
// reply came).
func (s *simConn) roundTripEnded(err error) {
	if err != nil && s.queuedBehind > 0 && s.perCallerSession() {
		s.w.stats.PerCallerUncertain++
		s.w.trace.logf(s.w, s.p, "", "round trip on per-caller writer's connection %d ended without its replies, "+
			"%d command(s) queued behind it: %v", s.c.clientID, s.queuedBehind, err)
	}
	s.drainedInFlight = false
}

// fencedWithQueue is told that a fence of victim was answered.
func (w *world) fencedWithQueue(victim *connection) {
	s := victim.sc
	if s == nil || !s.perCallerSession() || s.rounds == 0 || !s.drainedInFlight && s.queuedBehind == 0 {
		return
	}
	w.stats.PerCallerFenced++
	w.trace.logf(w, s.p, "", "fence of per-caller writer's connection %d answered with a drained batch on the wire "+
		"(%v) or %d command(s) queued", victim.clientID, s.drainedInFlight, s.queuedBehind)
}

// countPerCallerSchedule counts a schedule whose sessions the engine drained on a pipelined client.
func (w *world) countPerCallerSchedule() {
	if w.opt.PerCallerWriter && !w.opt.Unpipelined {
		w.stats.PerCallerSchedules = 1
	}
}

var _ conn.PerCallerWriter = (*simConn)(nil)
