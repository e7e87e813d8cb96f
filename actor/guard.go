package actor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file is the guarded write (rules GuardedWriteNeedsTheLease,
// GuardedWriteChecksTheFence, GuardedWriteSettlesAnUnknownOutcome): writes
// sent as one of conn's guard scripts, which run them only while the
// lock's key holds its token (and, for a fencing-token lock, while no
// larger fencing token wrote through the lock). A refusal ends the handle
// through the state machine (InputGuardRefused), as a push-detected loss
// does; an unknown outcome is fenced like every uncertain command, then
// settled by reading back the write id the script records.

// lockSide is the rarely used part of a Lock (one pointer in the Lock):
// what only traced, fencing-token or guarded-writing locks need.
type lockSide struct {
	acquireSpan *trace.SpanContext // the acquisition's span, with tracing on (fences link to it)
	// fenceKey and fencingToken: a fencing-token lock's fence record
	// (conn.GuardFenceKey of its counter) and token; "" and 0 otherwise.
	fenceKey     string
	fencingToken int64
	// recordKey is the lock's write-id record (conn.GuardRecordKey of its
	// wire key), kept from its first guarded write on.
	recordKey string
	// turn lets one guarded write of the lock run at a time (it holds a
	// value while free), so that the write-id record a settling reads was
	// written by no other write of this lock.
	turn chan struct{}
	// unsettled: a guarded write of this lock ended unknown and its
	// connection could not be fenced, so it may still run: from then on no
	// settling concludes that a write did not run.
	unsettled bool
	// keepAlive is the keep-alive StartKeepAlive started, while it runs
	// (see Lock.keepAliveRunning); the one an acquisition starts is a flag.
	keepAlive *KeepAlive
	// ending is the lease's ending when it carries an error (the Lock's
	// end byte is endInSide; see setEnding).
	ending *sm.Ending
}

// sideLocked returns l's side, made when first needed; l.mu is held.
func (l *Lock) sideLocked() *lockSide {
	if l.side == nil {
		l.side = &lockSide{}
	}
	return l.side
}

// setFencing records that l is a fencing-token lock whose counter's wire
// key is counterKey and whose token is token (Acquire, before returning it).
func (l *Lock) setFencing(counterKey string, token int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sideLocked()
	s.fenceKey, s.fencingToken = conn.GuardFenceKey(counterKey), token
}

// Guarded is one guarded write: allowlisted commands (Writes, each its name
// then its arguments, run in order) or a user script (Script, with Keys and
// Args), and optionally the number of replicas that must have received it
// (Replicas ≥ 1, within ReplicaTimeout, whole milliseconds).
type Guarded struct {
	Writes         [][]string
	Script         *conn.GuardScript
	Keys, Args     []string
	Replicas       int
	ReplicaTimeout time.Duration
}

// The guarded write's own errors (the rest are conn's and the core's).
var (
	// ErrGuardKind: a semaphore permit or a read hold, whose token is a
	// member of a set shared with other holders, cannot guard writes.
	ErrGuardKind = errors.New("lease: guarded writes need a lock whose key holds its token (a mutex, a write hold or a fencing-token lock)")
	// ErrNotWritten matches a *NotWrittenError.
	ErrNotWritten = errors.New("lease: the guarded write did not run")
	// ErrWriteNotReplicated matches a *WriteNotReplicatedError.
	ErrWriteNotReplicated = errors.New("lease: the guarded write was not acknowledged by enough replicas")
	// ErrReplicasUnsupported: Replicas was asked of a transport that
	// cannot WAIT after a guarded write (conn.GuardReplicator); nothing
	// was sent.
	ErrReplicasUnsupported = errors.New("lease: this client cannot wait for replicas after a guarded write")
)

// NotWrittenError is a guarded write whose reply was lost (Cause, which
// matched ErrOutcomeUnknown) and which settling proved never ran: once the
// connection that carried it was fenced, the write-id record did not hold
// its id, read while its lease was sure to last. Nothing was written;
// sending it again is safe. It matches ErrNotWritten, and not Cause's
// sentinels (the outcome is known now).
type NotWrittenError struct {
	Cause error
}

// Error describes the settled outcome (Cause, the lost reply, is left out:
// it says the write may have run, which settling disproved).
func (e *NotWrittenError) Error() string {
	return ErrNotWritten.Error() + ": it got no answer, and once its connection was fenced the write-id record showed it never ran"
}

// Is matches ErrNotWritten.
func (e *NotWrittenError) Is(target error) bool { return target == ErrNotWritten }

// WriteNotReplicatedError is a guarded write that ran on the primary but that
// WAIT did not confirm on enough replicas within the timeout: the writes
// stay (nothing can take them back), but a failover to a replica that did
// not receive them loses them. It matches ErrWriteNotReplicated and,
// through Err, the classification of a failed WAIT.
type WriteNotReplicatedError struct {
	Required     int           // the replicas asked for
	Timeout      time.Duration // WAIT's timeout
	Acknowledged int           // WAIT's count, -1 when WAIT gave none (Err)
	Err          error
}

// Error describes the shortfall.
func (e *WriteNotReplicatedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v: the writes ran on the primary, WAIT %d %v gave no count: %v",
			ErrWriteNotReplicated, e.Required, e.Timeout, e.Err)
	}
	return fmt.Sprintf("%v: the writes ran on the primary, %d of %d replicas acknowledged them within %v",
		ErrWriteNotReplicated, e.Acknowledged, e.Required, e.Timeout)
}

// Is matches ErrWriteNotReplicated.
func (e *WriteNotReplicatedError) Is(target error) bool { return target == ErrWriteNotReplicated }

// Unwrap returns why WAIT gave no count, or nil.
func (e *WriteNotReplicatedError) Unwrap() error { return e.Err }

// notHeldError is sm.ErrNotHeld with why the lease ended.
type notHeldError struct{ ended error }

// Error reads "lease: the lock is not held: <why it ended>", one prefix.
func (e *notHeldError) Error() string {
	return sm.ErrNotHeld.Error() + ": " + strings.TrimPrefix(e.ended.Error(), "lease: ")
}

// Unwrap returns ErrNotHeld and why the lease ended.
func (e *notHeldError) Unwrap() []error { return []error{sm.ErrNotHeld, e.ended} }

// Guard runs g on the server only while the lock is the key's owner, in
// one script, and reports: nil (the writes ran; with Replicas, and were
// acknowledged); a *LossError matching sm.ErrOwnershipLost (refused,
// nothing written, and the handle is lost from now on); a *NotWrittenError
// (the reply was lost, and settling proved nothing ran); an error matching
// conn.ErrOutcomeUnknown (the reply was lost and settling could not tell);
// a *WriteNotReplicatedError; or the error of a write that was not sent (bad
// input, a lock no longer held, a done ctx, cross-slot keys) or that the
// server refused. Guarded writes of one lock run one at a time, in call
// order. It blocks for the round trip, and for settling while ctx lasts.
func (l *Lock) Guard(ctx context.Context, g Guarded) error {
	replicator, err := l.guardCheck(ctx, g)
	if err != nil {
		return err
	}
	ch, err := l.takeTurn(ctx)
	if err != nil {
		return err
	}
	turn := &guardTurn{ch: ch} // on the stack: no allocation per write
	defer turn.give()          // unless settleGuard handed it to a background fence
	op, writeID, sentBy, err := l.guardOp(g)
	if err != nil {
		return err
	}
	res, route, err := l.sendGuard(ctx, op)
	switch {
	case err == nil && !res.Owned:
		return l.guardRefused(false, nil)
	case err != nil && isStaleFence(err):
		return l.guardRefused(true, err)
	case err != nil && conn.ClassOf(err) == conn.Uncertain:
		settled := l.settleGuard(ctx, route.Session(), conn.GuardRecordKey(l.wireKey), writeID, sentBy, err, turn)
		if settled != nil || g.Replicas == 0 {
			return settled
		}
	case err != nil:
		return err
	}
	if g.Replicas == 0 {
		return nil
	}
	return l.confirmReplicated(ctx, replicator, writeID, g)
}

// guardCheck refuses what cannot be sent at all, before the lock's turn:
// a lock kind that cannot guard, a done ctx, replicas asked of a transport
// without WAIT, or a bad replica count or timeout.
func (l *Lock) guardCheck(ctx context.Context, g Guarded) (conn.GuardReplicator, error) {
	if l.kind.member() {
		return nil, ErrGuardKind
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if g.Replicas == 0 && g.ReplicaTimeout == 0 {
		return nil, nil
	}
	replicator, ok := l.d.transport.(conn.GuardReplicator)
	if !ok {
		return nil, ErrReplicasUnsupported
	}
	if g.Replicas < 1 || g.ReplicaTimeout < time.Millisecond {
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "guarded-write", Err: fmt.Errorf("%w (got %d replicas, %v)",
			conn.ErrInvalidWait, g.Replicas, g.ReplicaTimeout)}
	}
	return replicator, nil
}

// guardTurn is one guarded write's hold of its lock's turn.
type guardTurn struct {
	ch   chan struct{}
	kept bool // a background fence gives it back instead
	done bool
}

// give gives the turn back, once, unless kept.
func (t *guardTurn) give() {
	if !t.done && !t.kept {
		t.done = true
		t.ch <- struct{}{}
	}
}

// keep hands the turn to someone else, who gives it back with release
// (which holds the channel, not t: t stays on its caller's stack).
func (t *guardTurn) keep() (release func()) {
	t.kept = true
	ch := t.ch
	return func() { ch <- struct{}{} }
}

// takeTurn waits for the lock's turn of guarded writes, or ctx's end, and
// returns the turn's channel (a guardTurn of it gives the turn back).
func (l *Lock) takeTurn(ctx context.Context) (chan struct{}, error) {
	l.mu.Lock()
	s := l.sideLocked()
	if s.turn == nil {
		s.turn = make(chan struct{}, 1)
		s.turn <- struct{}{}
	}
	turn := s.turn
	l.mu.Unlock()
	if err := l.d.spawn.Wait(ctx, turn); err != nil {
		return nil, err
	}
	return turn, nil
}

// guardOp builds g's Op for the lock as it stands: held (Held or
// Recovering, its estimate not run out), or the error saying why not
// (sm.ErrNotHeld, with the lease's end when it ended). It returns the
// write's fresh id and the lease deadline at this moment, which the
// write-id record outlives on the server: it is given the TTL of the
// lease that deadline counts with (see settleGuard).
func (l *Lock) guardOp(g Guarded) (op conn.Op, writeID string, sentBy time.Duration, err error) {
	if err := l.d.closedErr(); err != nil {
		return conn.Op{}, "", 0, err
	}
	l.mu.Lock()
	l.observeLocked()
	deadline, holding := l.h.LeaseDeadline()
	ttl := l.h.Duration()
	side := l.sideLocked()
	fenceKey, fencing := side.fenceKey, side.fencingToken
	if side.recordKey == "" {
		side.recordKey = conn.GuardRecordKey(l.wireKey)
	}
	record := side.recordKey
	var ended error
	if !holding && l.ended() {
		ended = l.endingCause(l.endingLocked())
	}
	l.mu.Unlock()
	if !holding {
		if ended != nil {
			return conn.Op{}, "", 0, &notHeldError{ended: ended}
		}
		return conn.Op{}, "", 0, sm.ErrNotHeld
	}
	writeID = l.d.newToken()
	op = conn.GuardOp(conn.Guard{LeaseKey: l.wireKey, RecordKey: record, Token: l.token, WriteID: writeID, RecordTTL: ttl,
		FenceKey: fenceKey, FencingToken: fencing, Writes: g.Writes, Script: g.Script, ScriptKeys: g.Keys, ScriptArgs: g.Args})
	if err := op.Invalid(); err != nil {
		return conn.Op{}, "", 0, err
	}
	for _, k := range op.GuardKeys() {
		if err := l.d.transport.CheckFencedKeys(l.wireKey, k); err != nil {
			return conn.Op{}, "", 0, &conn.Error{Class: conn.NotSubmitted, Op: op.Name(), Err: conn.ErrCrossSlot}
		}
	}
	return op, writeID, deadline, nil
}

// sendGuard sends op on the key's session, as a release is sent (once
// more on a fresh session when the first was found dead before the
// hand-off), under the driver's command timeout. The route names the
// session that carried it.
func (l *Lock) sendGuard(ctx context.Context, op conn.Op) (conn.Result, *conn.Route, error) {
	ctx, cancel := l.d.commandContext(ctx)
	defer cancel()
	l.d.inflight.Add() // Shutdown waits for the command
	defer l.d.inflight.Done()
	route := &conn.Route{}
	for attempt := 0; ; attempt++ {
		s, err := l.d.sessionFor(ctx, l.wireKey)
		if err != nil {
			return conn.Result{}, route, err
		}
		res, err := l.d.run(ctx, s, op, route)
		if attempt > 0 || err == nil || conn.ClassOf(err) != conn.NotSubmitted || !conn.RetriableOnFreshSession(err) {
			return res, route, err
		}
	}
}

// isStaleFence reports a STALEFENCE reply: a larger fencing token wrote
// through the lock.
func isStaleFence(err error) bool {
	var e *conn.Error
	return errors.As(err, &e) && e.Class == conn.Definite && e.Code == conn.StaleFenceCode
}

// guardRefused ends the handle after a refusal (stale: the fence record's;
// reply, the server's error reply) and returns the caller's error.
func (l *Lock) guardRefused(stale bool, reply error) error {
	l.mu.Lock()
	l.step(sm.Input{Kind: sm.InputGuardRefused, StaleFence: stale, Now: l.d.clock.Now()}, 0)
	l.mu.Unlock()
	if stale {
		return &LossError{Reason: LossFenceRefused, Err: reply}
	}
	return &LossError{Reason: LossGuardRefused}
}
