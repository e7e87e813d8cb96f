package conn

import (
	"context"
	"errors"
	"fmt"
)

// AcquireReplicated implements Transport: the fenced acquisition script
// followed by WAIT replicas waitMillis on the same connection — a
// connection of its own, dialled to the keys' primary for this call and
// closed after it, because WAIT blocks its socket and waits for the
// replication offset of the connection that ran the script. EVALSHA and
// WAIT go in one pipeline (after the definite NOSCRIPT reply, EVAL and
// WAIT in a second one).
//
// Errors describe the script, as for FencedAcquireOp: NotSubmitted (ctx
// already done, cross-slot keys, replicas < 1 or waitMillis < 1
// (ErrInvalidWait), the dial failed), Uncertain (the script's reply was
// lost: never replayed) or Definite (a server error reply, a MOVED — the
// connection does not follow redirects —, a malformed token). With a nil
// error the caller decides from Acknowledged and WaitErr.
//
// stop lets the caller's owner cut the call short whatever ctx says: once
// stop ends, the connection is closed and the call returns with an error
// wrapping ErrWaitStopped (NotSubmitted if stop had ended before the call,
// Uncertain otherwise; a script whose reply arrived reports the lost WAIT
// in WaitErr). A caller whose ctx ends returns at once, Uncertain; the
// connection is closed under the call.
func (e *Engine) AcquireReplicated(ctx, stop context.Context, leaseKey, counterKey, token string, ttlMillis, replicas,
	waitMillis int64) (ReplicatedFencedResult, error) {
	if err := e.checkReplicated(ctx, stop, leaseKey, counterKey, replicas, waitMillis); err != nil {
		return ReplicatedFencedResult{}, err
	}
	node, err := e.route(ctx, fencedOp, leaseKey)
	if err != nil {
		return ReplicatedFencedResult{}, err
	}
	dctx, cancel := e.own(ctx, openBound)
	c, err := e.client.Dial(dctx, node)
	cancel()
	if err != nil {
		return ReplicatedFencedResult{}, &Error{Class: NotSubmitted, Op: fencedOp, Addr: node, Err: err}
	}
	l := e.newLink(node, c, false)
	defer l.retire()
	unwatch := e.spawn.AfterFunc(stop, func() { l.retire() })
	defer unwatch()
	f := NewFencedAcquire(leaseKey, counterKey, token, ttlMillis)
	for {
		cmds := [2]Command{f.Command(), WaitCommand(replicas, waitMillis)}
		var replies [2]Reply
		err := l.exchange(ctx, fencedOp, cmds[:], replies[:], nil, nil)
		if replies[0].Kind == 0 {
			return ReplicatedFencedResult{}, replicatedFailure(stop, err)
		}
		out := f.Interpret(replies[0])
		if !out.Done && err != nil {
			return ReplicatedFencedResult{}, notRun(stop, err) // NOSCRIPT, then the WAIT behind it was cut: nothing ran
		}
		if !out.Done {
			continue // NOSCRIPT: the script did not run; EVAL it
		}
		res, ferr := finishFenced(out, replies[0].Err)
		if ferr != nil || !res.Acquired {
			return ReplicatedFencedResult{FencedResult: res}, ferr
		}
		acked, waitErr := e.waitReply(stop, replies[1], err)
		return ReplicatedFencedResult{FencedResult: res, Acknowledged: acked, WaitErr: waitErr}, nil
	}
}

// errNoReply is the cause of a command left without a reply by a Do that
// reported no error (a client breaking the seam's contract).
var errNoReply = errors.New("no reply")

// checkReplicated refuses, before anything is sent, what AcquireReplicated
// must not send.
func (e *Engine) checkReplicated(ctx, stop context.Context, leaseKey, counterKey string, replicas, waitMillis int64) error {
	if err := ctx.Err(); err != nil {
		return &Error{Class: NotSubmitted, Op: fencedOp, Err: err}
	}
	if err := e.CheckFencedKeys(leaseKey, counterKey); err != nil {
		return err
	}
	if replicas < 1 || waitMillis < 1 {
		return &Error{Class: NotSubmitted, Op: fencedOp,
			Err: fmt.Errorf("%w (got %d replicas, %d ms)", ErrInvalidWait, replicas, waitMillis)}
	}
	if stop.Err() != nil {
		return &Error{Class: NotSubmitted, Op: fencedOp, Err: ErrWaitStopped}
	}
	if err := e.clientClosed(); err != nil {
		return &Error{Class: NotSubmitted, Op: fencedOp, Err: err}
	}
	return nil
}

// replicatedFailure is the error of a replicated acquisition whose script
// got no reply: err (an *Error from the link), with ErrWaitStopped when
// stop had closed the connection under it.
func replicatedFailure(stop context.Context, err error) error {
	if err == nil {
		err = &Error{Class: Uncertain, Op: fencedOp, Err: errNoReply}
	}
	var e *Error
	if stop.Err() != nil && errors.As(err, &e) {
		c := *e
		c.Op, c.Err = fencedOp, fmt.Errorf("%w: %w", ErrWaitStopped, e.Err)
		return &c
	}
	return err
}

// notRun is the error of a replicated acquisition whose script provably
// did not run (NOSCRIPT) when the WAIT behind it was cut: NotSubmitted,
// with ErrWaitStopped when stop cut it.
func notRun(stop context.Context, err error) error {
	cause := err
	var le *Error
	if errors.As(err, &le) {
		cause = le.Err
	}
	if stop.Err() != nil {
		cause = fmt.Errorf("%w: %w", ErrWaitStopped, cause)
	}
	return &Error{Class: NotSubmitted, Op: fencedOp, Err: cause}
}

// waitReply reads WAIT's reply: the count, or a *Error saying why there
// is none (err: the pipeline's failure when WAIT's reply is missing).
func (e *Engine) waitReply(stop context.Context, reply Reply, err error) (int64, error) {
	if reply.Kind == 0 {
		var le *Error
		if errors.As(err, &le) {
			c := *le
			c.Op = waitOp
			if stop.Err() != nil {
				c.Err = fmt.Errorf("%w: %w", ErrWaitStopped, le.Err)
			}
			return 0, &c
		}
		return 0, &Error{Class: Uncertain, Op: waitOp, Err: err}
	}
	return waitCount(reply, reply.Err)
}
