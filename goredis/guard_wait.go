package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// ConfirmGuardReplicated implements conn.GuardReplicator as conn.Pool
// does: conn.GuardConfirmOp (the guarded write's write-id record re-written
// if it still holds the write's id) and WAIT replicas waitMillis pipelined
// on one EphemeralConn of the record's primary (EVAL and WAIT again after
// the definite NOSCRIPT), so that WAIT counts the replicas that have the
// guarded write. When stop ends first the call returns at once, Uncertain
// with conn.ErrWaitStopped; the round trip ends on its own (WAIT's timeout,
// the client's ReadTimeout), as for AcquireReplicated.
func (t *Transport) ConfirmGuardReplicated(ctx, stop context.Context, recordKey, writeID string, replicas,
	waitMillis int64) (int64, error) {
	const op = "guard-confirm"
	if err := ctx.Err(); err != nil {
		return 0, &conn.Error{Class: conn.NotSubmitted, Op: op, Err: err}
	}
	if replicas < 1 || waitMillis < 1 || stop.Err() != nil || t.isClosed() {
		return 0, notConfirmable(op, stop, replicas, waitMillis)
	}
	node, err := t.route(ctx, op, recordKey)
	if err != nil {
		return 0, err
	}
	nc, err := t.nodeClient(ctx, node)
	if err != nil {
		return 0, &conn.Error{Class: conn.NotSubmitted, Op: op, Addr: node, Err: err}
	}
	type answer struct {
		acked int64
		err   error
	}
	done := make(chan answer, 1)
	t.running.Go(func() {
		acked, err := t.confirm(ctx, nc.EphemeralConn(), node, recordKey, writeID, replicas, waitMillis)
		done <- answer{acked, err}
	})
	select {
	case a := <-done:
		return a.acked, a.err
	case <-stop.Done():
		return 0, &conn.Error{Class: conn.Uncertain, Op: op, Addr: node, Err: conn.ErrWaitStopped}
	}
}

// notConfirmable is the NotSubmitted error of a confirmation that cannot
// be sent: bad WAIT arguments, stop ended, the transport closed.
func notConfirmable(op string, stop context.Context, replicas, waitMillis int64) error {
	switch {
	case replicas < 1 || waitMillis < 1:
		return &conn.Error{Class: conn.NotSubmitted, Op: op, Err: conn.ErrInvalidWait}
	case stop.Err() != nil:
		return &conn.Error{Class: conn.NotSubmitted, Op: op, Err: conn.ErrWaitStopped}
	}
	return &conn.Error{Class: conn.NotSubmitted, Op: op, Err: conn.ErrPoolClosed}
}

// confirm runs the re-write and WAIT on rc, then closes it.
func (t *Transport) confirm(ctx context.Context, rc *redis.Conn, node, recordKey, writeID string, replicas,
	waitMillis int64) (int64, error) {
	const op = "guard-confirm"
	defer func() { _ = rc.Close() }()
	var w witness
	w.install(rc)
	call, _ := conn.GuardConfirmOp(recordKey, writeID).ScriptCall()
	for {
		cmds := []conn.Command{call.Command(), conn.WaitCommand(replicas, waitMillis)}
		t.report(ctx, cmds...)
		results, err := w.roundTrip(ctx, rc, cmds)
		if err == nil && results[0].transport != nil {
			err = results[0].transport
		}
		if err != nil {
			class := conn.Uncertain
			if errors.Is(err, errNotHandedOff) {
				class = conn.NotSubmitted
			}
			return 0, &conn.Error{Class: class, Op: op, Addr: node, Err: err}
		}
		out := call.Interpret(results[0].reply)
		switch {
		case !out.Done:
			continue // NOSCRIPT: the script did not run; EVAL it
		case out.Err != nil || out.Redirect != nil:
			return 0, definite(op, nil, results[0])
		case !out.Owned:
			return 0, &conn.Error{Class: conn.Definite, Op: op, Addr: node, Err: conn.ErrGuardRecordChanged}
		}
		return waitCount(results[1])
	}
}

var _ conn.GuardReplicator = (*Transport)(nil)
