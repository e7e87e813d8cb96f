package dst

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/respire-go/respire/conn"
)

// This file is the simulated connection, a conn.Conn over the seeded
// network (network.go): what a client library's pinned socket is to the
// engine, and nothing more. Like FoundationDB's Sim2Conn under the real
// FlowTransport, it only carries bytes with latency and faults; sessions,
// identity, fences, redirects, push and classification are the engine's.
// It behaves as a client's socket does on real sockets: a command written
// into a socket the server already closed vanishes and ends in io.EOF once
// the process notices; a socket the process closes itself while commands
// are in flight still has them run by the server, and answers them with
// errClosedLocally once its drain gives up; ErrNotWritten only when
// nothing was written.

// errClosedLocally is what a command in flight on a connection the process
// closed itself ends with once the close stops waiting for its reply
// (rueidis: ErrClosing). Its outcome is unknown: the server may have run
// it, or may still run it.
var errClosedLocally = errors.New("connection closed by the client while the command was in flight")

// errConnClosed is the cause of a Do on a connection already closed by
// the client (nothing is written).
var errConnClosed = errors.New("connection closed by the client")

// simConn is one pinned connection of a process to a node.
type simConn struct {
	w         *world
	p         *process
	c         *connection
	pipelined bool
	busy      bool // a Do is in progress (on a connection that takes one at a time: oneAtATime)
	session   bool // a lock command was handed to it: it carries a session
	rounds    int  // Dos in progress
	// a per-caller writer's session (drainstats.go): lock commands handed
	// to it during a round trip and not yet written by the drainer, and
	// whether the Do in progress is the drainer's batch
	queuedBehind    int
	drainedInFlight bool
	broken          error // a non-pipelined connection whose Do ended early is discarded, as go-redis does
	closed          bool  // Close was called
}

// pending is one pipeline on a connection: commands written together, in
// order, and what came back. done is closed once every reply came, or the
// connection was lost under them.
type pending struct {
	replies []conn.Reply
	got     int
	lost    error // what the client reports when the connection died first
	done    chan struct{}
	over    bool // done is closed, or the caller stopped waiting
}

func (x *pending) finish() {
	if !x.over {
		x.over = true
		close(x.done)
	}
}

// Pipelined implements conn.Conn.
func (s *simConn) Pipelined() bool { return s.pipelined }

// WritesPerCaller implements conn.PerCallerWriter: a pipelined connection
// of a schedule with Options.PerCallerWriter is rueidis' or valkey-go's
// kind, whose sessions the engine drains.
func (s *simConn) WritesPerCaller() bool { return s.pipelined && s.w.opt.PerCallerWriter }

// Do implements conn.Conn: cmds are written as one pipeline (unless the
// connection is already known closed, the ctx ended, or a delayed write
// is still waiting when it ends: ErrNotWritten), and their replies read in
// order. A pipelined connection returns when ctx ends, the commands left
// to their fate; so does a non-pipelined one, which is then discarded.
func (s *simConn) Do(ctx context.Context, cmds []conn.Command, replies []conn.Reply) error {
	w := s.w
	if len(cmds) != len(replies) || len(cmds) == 0 {
		return fmt.Errorf("dst: Do with %d commands and %d replies", len(cmds), len(replies))
	}
	if s.oneAtATime() {
		if s.busy {
			w.check.fail(w, 0, "the engine called Do on %s %s while another Do was in progress", s.kind(), s.c.label())
		}
		s.busy = true
		defer func() { s.busy = false }()
	}
	s.rounds++
	defer func() { s.rounds-- }()
	if err := s.unwritable(ctx); err != nil {
		return fmt.Errorf("%w: %w", conn.ErrNotWritten, err)
	}
	if w.shouldDelayWrite() {
		gate := make(chan struct{})
		w.schedule(s.p, w.now+w.between(0, 5*time.Millisecond), func() { close(gate) })
		if err := s.p.spawn.Wait(ctx, gate); err != nil {
			return fmt.Errorf("%w: %w", conn.ErrNotWritten, err)
		}
		if err := s.unwritable(ctx); err != nil {
			return fmt.Errorf("%w: %w", conn.ErrNotWritten, err)
		}
	}
	if s.fakeFence(cmds, replies) {
		return nil
	}
	x := s.write(ctx, cmds)
	err := s.p.spawn.Wait(ctx, x.done)
	if err != nil && w.mutateFallback(s, cmds, x) {
		err = nil // the broken client made up the confirming reply
	}
	copy(replies, x.replies)
	switch {
	case err != nil:
		x.over = true // late replies are dropped
		if !s.pipelined {
			s.broken = err
		}
	case x.lost != nil && w.opt.Mutation == MutationClosingNotSubmitted && errors.Is(x.lost, errClosedLocally):
		err = fmt.Errorf("%w: %w", conn.ErrNotWritten, x.lost) // the broken client claims nothing was written
	default:
		err = x.lost
	}
	s.roundTripEnded(err)
	return err
}

// unwritable returns why nothing can be written now: the ctx ended, the
// client closed the connection, or it is known broken (see Err).
func (s *simConn) unwritable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if s.closed {
		return errConnClosed
	}
	return s.Err()
}

// write puts cmds on the wire, each attributed to the lock operation it
// belongs to (for the checker), and returns their pipeline.
func (s *simConn) write(ctx context.Context, cmds []conn.Command) *pending {
	w := s.w
	x := &pending{replies: make([]conn.Reply, len(cmds)), done: make(chan struct{})}
	tracked := false // the command follows CLIENT CACHING YES: a watcher's read
	ops := make([]*opRun, len(cmds))
	for i, cmd := range cmds {
		// the bytes leave with the write: the engine may reuse cmd's arguments once Do returned
		cmd.Args = slices.Clone(cmd.Args)
		r := &request{cmd: w.mutateCommand(cmd)}
		r.op, r.late = s.p.attribute(ctx, cmd, tracked, s.c)
		if tracked && strings.EqualFold(cmd.Args[0], "ZSCORE") {
			w.stats.MemberWatchReads++
		}
		tracked = isCachingYes(cmd)
		r.onReply = func(reply conn.Reply) {
			x.replies[i] = w.mutateReply(s.p, r, reply)
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
		w.write(s.c, r)
		ops[i] = r.op
		if r.op != nil {
			r.op.wrote(s.c)
		}
		if r.late && r.op.sent == 1 {
			w.check.onUncertain(w, r.op) // the driver was told before this connection carried it
		}
	}
	s.wrotePipeline(ctx, ops)
	return x
}

// Err implements conn.Conn: non-nil once the process knows the connection
// is closed — it closed it, the server's close was noticed, or a
// non-pipelined Do ended early. A connection the server closed and the
// process has not noticed yet looks alive, unless its reader notices now
// (Options.NoticeDeadPercent, as conn's death watch would).
func (s *simConn) Err() error {
	c := s.c
	switch {
	case s.closed:
		return errConnClosed
	case s.broken != nil:
		return s.broken
	case c.closed && c.lostErr != nil:
		return c.lostErr
	case c.closed || c.abandoned || c.retired:
		return errConnClosed
	case c.serverGone && s.w.shouldNoticeDead():
		s.w.trace.logf(s.w, s.p, "", "found connection %d dead before the write", c.clientID)
		s.w.closeConn(c, io.EOF)
		return io.EOF
	}
	return nil
}

// Close implements conn.Conn as a client's close of a busy socket: no new
// command is written; the replies of those in flight are still read for a
// while, then they fail with errClosedLocally while the server may still
// run them. It never blocks.
func (s *simConn) Close() {
	if s.closed {
		return
	}
	s.closed = true
	if len(s.c.inFlight) > 0 {
		s.w.stats.LocalCloses++
		s.w.trace.logf(s.w, s.p, "", "closing connection %d with %d command(s) in flight", s.c.clientID, len(s.c.inFlight))
	}
	s.w.retireConn(s.c)
}

// isCachingYes reports whether cmd is CLIENT CACHING YES (the next
// command is a tracked read).
func isCachingYes(cmd conn.Command) bool {
	return len(cmd.Args) == 3 && cmd.Args[0] == "CLIENT" && cmd.Args[1] == "CACHING"
}
