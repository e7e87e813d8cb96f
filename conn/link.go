package conn

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// link is one pinned Conn of the engine, as every part of it uses one: a
// session's, a node's fence connection, a watcher's reader. It refuses what
// must not be sent (a done ctx, a retired link, a closed client, a socket
// known dead, an aborted route), checks an idle socket with a PING first,
// and classifies every failure with the one rule: NotSubmitted only when
// nothing reached the socket, Uncertain for everything after the hand-off.
//
// A link on a Conn that does not pipeline, and a session's link on a
// PerCallerWriter, has a drainer (drain.go): a caller who finds the link
// idle sends its own commands, the others queue theirs and wait on their
// request, never on the socket, and the drainer writes everything queued in
// one pipeline. On the other links of a Pipelined Conn a caller hands its
// commands to the Conn itself, from its own goroutine (the client pipelines
// them and returns at the ctx's end). Methods are safe for concurrent use.
type link struct {
	e         *Engine
	node      string
	conn      Conn
	pipelined bool
	pings     bool     // an idle period is checked with a PING
	owner     *session // the session this link carries; nil for a fence or watcher link

	_         [64]byte     // keeps lastReply's writes off the cache line every command reads
	lastReply atomic.Int64 // clock time of the last reply (see checkIdle)
	_         [56]byte

	retired   atomic.Bool
	closing   atomic.Bool   // a close of the Conn was started
	closed    chan struct{} // closed once the Conn's Close returned
	suspect   atomic.Bool   // another connection to the node broke: PING before the next command
	closeOnce sync.Once

	drain *drainer // not Pipelined: the batching drainer; nil otherwise
}

// newLink wraps c, dialled to node, and starts its drainer when c does not
// pipeline.
func (e *Engine) newLink(node string, c Conn, pings bool) *link {
	return e.openLink(node, c, pings, !c.Pipelined())
}

// newSessionLink is newLink for a session: it also has a drainer on a
// pipelined Conn that writes each caller's commands as they come
// (PerCallerWriter), so that concurrent callers' commands reach the client
// as one pipeline per round trip instead of one write each (see drain.go).
func (e *Engine) newSessionLink(node string, c Conn) *link {
	w, ok := c.(PerCallerWriter)
	return e.openLink(node, c, true, !c.Pipelined() || ok && w.WritesPerCaller())
}

// openLink wraps c; drained starts its drainer.
func (e *Engine) openLink(node string, c Conn, pings, drained bool) *link {
	l := &link{e: e, node: node, conn: c, pipelined: c.Pipelined(), pings: pings, closed: make(chan struct{})}
	l.touch()
	if drained {
		l.drain = newDrainer(l)
	}
	return l
}

// replyGrain bounds how stale the recorded reply time may be: within it a
// busy link only reads lastReply, so concurrent callers do not pass its
// cache line back and forth between cores.
const replyGrain = int64(time.Millisecond)

// touch records that the socket just delivered a reply.
func (l *link) touch() {
	if now := int64(l.e.clock.Now()); now-l.lastReply.Load() > replyGrain {
		l.lastReply.Store(now)
	}
}

// exchange hands cmds to the link as one pipeline and fills replies (one
// per command). carrier is the Session named in errors and told to route
// right before the hand-off (route may veto it: ErrAborted). A returned
// error is an *Error: NotSubmitted when nothing was handed to the socket,
// otherwise Uncertain; replies read before a failure are kept (Kind set),
// the others are zero. It blocks until the replies, or until ctx ends (a
// caller of a link that does not pipeline waits on its request only).
func (l *link) exchange(ctx context.Context, op string, cmds []Command, replies []Reply, route *Route, carrier Session) error {
	return l.hand(ctx, op, cmds, replies, route, carrier, true)
}

// hand is exchange; report false keeps the commands from the observer (a
// batch of keep-alive renewals).
func (l *link) hand(ctx context.Context, op string, cmds []Command, replies []Reply, route *Route, carrier Session,
	report bool) error {
	if err := l.notSendable(ctx); err != nil {
		return l.notSent(op, carrier, err)
	}
	if l.drain != nil {
		if !route.Carry(carrier) {
			return l.notSent(op, carrier, ErrAborted)
		}
		if report {
			l.report(ctx, cmds)
		}
		return l.drain.exchange(ctx, op, cmds, replies, carrier)
	}
	if err := l.checkIdle(ctx); err != nil {
		return l.notSent(op, carrier, err)
	}
	if !route.Carry(carrier) {
		return l.notSent(op, carrier, ErrAborted)
	}
	if report {
		l.report(ctx, cmds)
	}
	if err := l.conn.Do(ctx, cmds, replies); err != nil {
		return l.failed(ctx, op, err, carrier, true)
	}
	l.touch()
	return nil
}

// report tells the observer of each command about to be handed off.
func (l *link) report(ctx context.Context, cmds []Command) {
	if o := l.e.obs; o != nil && o.Command != nil {
		for _, c := range cmds {
			o.Command(ctx, l.conn, CommandName(c))
		}
	}
}

// notSendable is checked right before a hand-off: a done ctx, a retired
// link, a closed client or a socket known dead prove nothing will be
// written.
func (l *link) notSendable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if l.retired.Load() {
		return ErrSessionRetired
	}
	if err := l.e.clientClosed(); err != nil {
		return err
	}
	if err := l.conn.Err(); err != nil {
		l.e.retireLink(l, RetiredDead)
		return errors.Join(ErrSessionRetired, err)
	}
	return nil
}

// notSent is the NotSubmitted *Error of a command refused before the
// hand-off.
func (l *link) notSent(op string, carrier Session, err error) *Error {
	return &Error{Class: NotSubmitted, Op: op, Addr: l.node, Session: carrier, Err: err}
}

// failed classifies err, returned by Conn.Do for commands handed to the
// socket, and retires the link unless the caller's own ctx ended the wait
// on a pipelined Conn (the socket is fine then: the client drops the late
// reply, and the command's uncertainty is the caller's to settle). Only
// ErrNotWritten proves nothing was written: the command is then
// NotSubmitted, joined with ErrSessionRetired so that a fresh session may
// send it.
func (l *link) failed(ctx context.Context, op string, err error, carrier Session, mine bool) *Error {
	class := l.classify(err)
	if !(mine && cancelledByCaller(ctx, err)) {
		l.e.retireLink(l, RetiredTransportError)
		l.e.markSlotsStale()
	}
	if class == NotSubmitted {
		err = errors.Join(ErrSessionRetired, err)
	}
	return &Error{Class: class, Op: op, Addr: l.node, Session: carrier, Err: err}
}

// classify is the one rule for an error of Conn.Do: NotSubmitted only
// when the client proves no byte reached the socket (ErrNotWritten).
func (l *link) classify(err error) Class {
	if mutationClosingNotSubmitted && l.retired.Load() {
		return NotSubmitted // deliberately wrong: see mutation_on.go
	}
	if errors.Is(err, ErrNotWritten) {
		return NotSubmitted
	}
	return Uncertain
}

// checkIdle is called right before commands are handed to a link whose
// socket had no reply for longer than the idle threshold, or is suspect
// since another connection to its node broke: the server may have closed
// it while idle (timeout, CLIENT KILL, failover), and writing into it would
// make the commands Uncertain. So it first answers a PING on its own round
// trip (bounded): any reply, an error reply included, proves it alive; a
// transport failure proves it dead with nothing of ours written — the link
// is retired and the returned error (ErrSessionRetired joined) makes the
// commands NotSubmitted, so a fresh session may send them. A close between
// the PING's reply and our write is not seen (Uncertain: conservative).
func (l *link) checkIdle(ctx context.Context) error {
	if !l.idleDue() {
		return nil
	}
	if l.owner != nil && !l.owner.opened.Load() {
		return nil // a session's handshake: the socket is new
	}
	pctx, cancel := l.bounded(ctx, pingBound)
	defer cancel()
	var reply [1]Reply
	err := l.conn.Do(pctx, pingCommand[:], reply[:])
	if err != nil {
		if ctx.Err() != nil && cancelledByCaller(pctx, err) {
			return context.Cause(ctx) // the caller gave up; the PING proved nothing either way
		}
		l.e.retireLink(l, RetiredDead)
		return errors.Join(ErrSessionRetired, err)
	}
	l.suspect.Store(false)
	l.touch()
	return nil
}

// idleDue reports whether checkIdle would PING before the next command.
func (l *link) idleDue() bool {
	return l.pings && (int64(l.e.clock.Now())-l.lastReply.Load() > l.e.idleCheck.Load() || l.suspect.Load())
}

// bounded bounds a command the link sends on its own (a PING, a
// handshake) by d. A ctx that cannot end (context.Background()) on a
// Pipelined connection is kept as it is and the bound is a clock timer that
// retires the link, closing its connection under the command: a client
// keeps its fast synchronous path for a ctx without Done (rueidis would
// otherwise move the socket to its background mode for good), and a
// command that outlives its bound fails all the same. Any other ctx gets
// the bound as a deadline (Engine.own).
func (l *link) bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if ctx.Done() != nil || !l.pipelined {
		return l.e.own(ctx, d)
	}
	t := l.e.clock.AfterFunc(d, func() { l.e.retireLink(l, RetiredDead) })
	return ctx, func() { t.Stop() }
}

// pingBound bounds an idle check's PING.
const pingBound = 2 * time.Second

var pingCommand = [1]Command{{Args: []string{"PING"}, Key: -1}}

// markRetired marks the link retired: nothing new is handed to it, its
// Conn stays open for what is in flight (a fence closes it once the kill
// answered). A drainer is woken: it fails what is queued, closes the Conn
// once its batch in flight ended, and stops. It reports whether this call
// retired the link.
func (l *link) markRetired() bool {
	first := !l.retired.Swap(true)
	if l.drain != nil {
		l.drain.wakeUp()
	}
	return first
}

// retire marks the link retired and closes its Conn on a task of the
// engine (Engine.Close waits): a client may drain replies for a moment,
// and no caller should wait for that. It reports whether this call retired
// it.
func (l *link) retire() bool {
	first := l.markRetired()
	if l.closing.CompareAndSwap(false, true) {
		l.e.background(l.closeConn) // also under a drainer's (or a caller's) Do in flight: it ends promptly
	}
	return first
}

// closeConn closes the Conn, once; l.closed is closed when it returned.
func (l *link) closeConn() {
	l.closeOnce.Do(func() {
		l.conn.Close()
		close(l.closed)
	})
}

// waitClosed waits until the link's Conn was closed (retire started it).
func (l *link) waitClosed() { _ = l.e.spawn.Wait(context.Background(), l.closed) }
