package conn

import (
	"context"
	"errors"
	"fmt"
)

// GuardConfirmScript re-writes a guarded write's write-id record with the
// same value and TTL (KEYS[1] = the record; ARGV[1] = the write id) if it
// still holds that id: a write of nothing new, so that the connection that
// runs it has a replication offset at or past the guarded write's (which
// ran before it), for the WAIT that follows it there. Replies: 1 = the
// record holds the id (and was re-written), 0 = it does not (nothing
// written: the lease ended, or a later write of the lock replaced it).
const GuardConfirmScript = "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n" +
	"redis.call('set', KEYS[1], ARGV[1], 'KEEPTTL')\n" +
	"return 1"

// GuardConfirmScriptSHA is the SHA1 of GuardConfirmScript.
const GuardConfirmScriptSHA = "aa49e18b2ced989f8394f15f0a7c023755bac511"

// GuardConfirmOp runs GuardConfirmScript on recordKey for writeID
// (Result.Owned: the record held it and was re-written).
func GuardConfirmOp(recordKey, writeID string) Op {
	return primitiveOp(&primitiveCall{name: guardConfirmOp, kind: primOwned, script: GuardConfirmScript,
		sha: GuardConfirmScriptSHA, keys: []string{recordKey}, args: []string{writeID}})
}

const guardConfirmOp = "guard-confirm"

// ErrGuardRecordChanged is the Definite cause of a replication check whose
// write-id record no longer held the write's id (GuardConfirmScript
// answered 0): WAIT, sent after it, counts nothing about the guarded write.
var ErrGuardRecordChanged = errors.New("the write-id record no longer holds the guarded write's id")

// GuardReplicator is what a Transport implements to offer WAIT after a
// guarded write (lease's GuardWith with Replicas); *Engine does, on every
// client adapter.
type GuardReplicator interface {
	// ConfirmGuardReplicated runs GuardConfirmOp(recordKey, writeID) and
	// WAIT replicas waitMillis, pipelined on one dedicated connection to
	// the primary of recordKey's slot, and returns WAIT's count. WAIT waits
	// for the replication offset of its connection's last write, which is
	// the re-write of the record, after the guarded write: so the count is
	// of replicas that have the guarded write too. Errors are *Error
	// values: NotSubmitted (replicas < 1 or waitMillis < 1:
	// ErrInvalidWait; stop already ended: ErrWaitStopped; a dial failure),
	// Definite (the record no longer held the id: ErrGuardRecordChanged; a
	// server error reply to the script or to WAIT), Uncertain (the
	// connection failed or ctx or stop ended on the way; the re-write is
	// harmless, so nothing needs settling). stop ending closes the
	// connection at once.
	ConfirmGuardReplicated(ctx, stop context.Context, recordKey, writeID string, replicas, waitMillis int64) (int64, error)
}

// checkWaitArgs refuses, before anything is sent, a WAIT that would not
// wait (replicas < 1) or would block forever (waitMillis < 1), or whose
// stop already ended.
func checkWaitArgs(op string, stop context.Context, replicas, waitMillis int64) error {
	if replicas < 1 || waitMillis < 1 {
		return &Error{Class: NotSubmitted, Op: op,
			Err: fmt.Errorf("%w (got %d replicas, %d ms)", ErrInvalidWait, replicas, waitMillis)}
	}
	if stop.Err() != nil {
		return &Error{Class: NotSubmitted, Op: op, Err: ErrWaitStopped}
	}
	return nil
}

// ConfirmGuardReplicated implements GuardReplicator as AcquireReplicated
// does for the fenced script: GuardConfirmOp and WAIT on a connection of
// its own, dialled to the primary of the record's slot for this call and
// closed after it; EVALSHA and WAIT in one pipeline, EVAL and WAIT in a
// second one after the definite NOSCRIPT reply.
func (e *Engine) ConfirmGuardReplicated(ctx, stop context.Context, recordKey, writeID string, replicas,
	waitMillis int64) (int64, error) {
	if err := checkWaitArgs(guardConfirmOp, stop, replicas, waitMillis); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, &Error{Class: NotSubmitted, Op: guardConfirmOp, Err: err}
	}
	if err := e.clientClosed(); err != nil {
		return 0, &Error{Class: NotSubmitted, Op: guardConfirmOp, Err: err}
	}
	node, err := e.route(ctx, guardConfirmOp, recordKey)
	if err != nil {
		return 0, err
	}
	dctx, cancel := e.own(ctx, openBound)
	c, err := e.client.Dial(dctx, node)
	cancel()
	if err != nil {
		return 0, &Error{Class: NotSubmitted, Op: guardConfirmOp, Addr: node, Err: err}
	}
	l := e.newLink(node, c, false)
	defer l.retire()
	unwatch := e.spawn.AfterFunc(stop, func() { l.retire() })
	defer unwatch()
	call, _ := GuardConfirmOp(recordKey, writeID).ScriptCall()
	for {
		cmds := [2]Command{call.Command(), WaitCommand(replicas, waitMillis)}
		var replies [2]Reply
		err := l.exchange(ctx, guardConfirmOp, cmds[:], replies[:], nil, nil)
		if replies[0].Kind == 0 {
			return 0, guardWaitFailure(stop, err)
		}
		out := call.Interpret(replies[0])
		switch {
		case !out.Done && err != nil:
			return 0, &Error{Class: NotSubmitted, Op: guardConfirmOp, Err: stopCause(stop, err)} // NOSCRIPT: nothing ran
		case !out.Done:
			continue // NOSCRIPT: the script did not run (WAIT counted nothing of ours); EVAL it
		case out.Err != nil:
			return 0, definiteError(guardConfirmOp, "", nil, out.Err, replies[0].Err)
		case out.Redirect != nil:
			return 0, &Error{Class: Definite, Op: guardConfirmOp, Code: "MOVED", Redirect: out.Redirect, Err: replies[0].Err}
		case !out.Owned:
			return 0, &Error{Class: Definite, Op: guardConfirmOp, Err: ErrGuardRecordChanged}
		}
		return e.waitReply(stop, replies[1], err)
	}
}

// guardWaitFailure is the error of a replication check whose script got
// no reply: err (an *Error from the link) under guardConfirmOp, with
// ErrWaitStopped when stop had closed the connection under it.
func guardWaitFailure(stop context.Context, err error) error {
	if err == nil {
		return &Error{Class: Uncertain, Op: guardConfirmOp, Err: errNoReply}
	}
	var le *Error
	if !errors.As(err, &le) {
		return &Error{Class: Uncertain, Op: guardConfirmOp, Err: err}
	}
	c := *le
	c.Op = guardConfirmOp
	if stop.Err() != nil {
		c.Err = fmt.Errorf("%w: %w", ErrWaitStopped, le.Err)
	}
	return &c
}

// stopCause is the cause of a failure: err's own cause, with
// ErrWaitStopped when stop ended.
func stopCause(stop context.Context, err error) error {
	cause := err
	var le *Error
	if errors.As(err, &le) {
		cause = le.Err
	}
	if stop.Err() != nil {
		cause = fmt.Errorf("%w: %w", ErrWaitStopped, cause)
	}
	return cause
}

var _ GuardReplicator = (*Engine)(nil)
