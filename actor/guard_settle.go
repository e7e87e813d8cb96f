package actor

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/conn"
)

// settleGuard settles a guarded write whose outcome is unknown (cause):
// the session that carried it is fenced (once the kill answered, the
// script has run or never will: rule FenceIsFinal), then the write-id
// record is read on a fresh session. Our id there: the writes ran (nil).
// Anything else, read before the lease deadline the handle counted with
// when the write was sent (sentBy) and still counts with now: the script
// never ran (a *NotWrittenError) — had it run, it would have given the
// record the TTL of the lease that deadline counts with (Duration, sent
// as the record's TTL: that lease was confirmed before the write was sent,
// so the record expires no earlier than the lease key did as of that
// confirmation), and no other write of this lock can have replaced the id
// (turn). Otherwise, or
// when the fence or the read fails, or ctx ends first: cause (unknown).
//
// When ctx has ended already (the usual reason for the unknown outcome),
// it returns cause at once and a background task fences the session and
// only then gives the lock's turn back, so that the next guarded write of
// the lock is settled soundly.
func (l *Lock) settleGuard(ctx context.Context, carrier conn.Session, record, writeID string, sentBy time.Duration,
	cause error, turn *guardTurn) error {
	if carrier == nil {
		l.markUnsettled()
		return cause
	}
	if ctx.Err() != nil {
		release := turn.keep()
		l.d.goBackground(func() {
			defer release()
			fctx, done := l.d.fenceBound(context.Background())
			defer done()
			if l.d.transport.Fence(fctx, carrier) != nil {
				l.markUnsettled()
			}
		})
		return cause
	}
	res, fenced, read := l.d.fenceThenRead(ctx, carrier, conn.OwnerOp(record))
	if !fenced {
		l.markUnsettled()
	}
	if !read {
		return cause
	}
	if res.Owned && res.Token == writeID {
		return nil
	}
	deadline, holding := l.LeaseDeadline()
	if holding && l.d.clock.Now() < min(deadline, sentBy) && !l.isUnsettled() {
		return &NotWrittenError{Cause: cause}
	}
	return cause
}

// markUnsettled records that a guarded write of l may still run.
func (l *Lock) markUnsettled() {
	l.mu.Lock()
	l.sideLocked().unsettled = true
	l.mu.Unlock()
}

func (l *Lock) isUnsettled() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.side != nil && l.side.unsettled
}

// fenceThenRead fences carrier, then runs read (a read that changes
// nothing) on a fresh session. fenced reports that the fence answered;
// read that the read answered, before ctx ended. Failures that may pass
// (transport, dial, did-not-run replies such as LOADING after a restart)
// are retried every cleanupRetry; a fence that cannot be sent (no identity,
// the client closed) or a driver shutting down gives up. It blocks for the
// fence and the read.
func (d *Driver) fenceThenRead(ctx context.Context, carrier conn.Session, read conn.Op) (res conn.Result, fenced, answered bool) {
	for {
		if d.closedErr() != nil {
			return conn.Result{}, fenced, false
		}
		var err error
		if !fenced {
			fctx, done := d.fenceBound(ctx)
			err = d.transport.Fence(fctx, carrier)
			done()
			if fenced = err == nil; fenced {
				continue // read at once
			}
		} else {
			rctx, done := d.fenceBound(ctx) // a read bounded as a fence is
			res, err = d.transport.Do(rctx, read, nil)
			done()
			if err == nil {
				return res, true, true
			}
		}
		if !settleRetries(err) || Sleep(ctx, d.spawn, d.clock, cleanupRetry) != nil {
			return conn.Result{}, fenced, false
		}
	}
}

// confirmReplicated waits, after a guarded write that ran, for g.Replicas
// replicas to acknowledge it (conn.GuardReplicator: the record re-written
// and WAIT, on a dedicated connection).
func (l *Lock) confirmReplicated(ctx context.Context, r conn.GuardReplicator, writeID string, g Guarded) error {
	wait := ceilMillis(g.ReplicaTimeout)
	acked, err := r.ConfirmGuardReplicated(ctx, l.d.stop, conn.GuardRecordKey(l.wireKey), writeID,
		int64(g.Replicas), wait)
	nr := &WriteNotReplicatedError{Required: g.Replicas, Timeout: g.ReplicaTimeout, Acknowledged: int(acked)}
	switch {
	case err != nil:
		nr.Acknowledged, nr.Err = -1, err
		if errors.Is(err, conn.ErrWaitStopped) && l.d.closedErr() != nil {
			nr.Err = errors.Join(l.d.closedErr(), err)
		}
		return nr
	case acked < int64(g.Replicas):
		return nr
	}
	return nil
}
