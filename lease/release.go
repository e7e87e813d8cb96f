package lease

import (
	"context"
	"errors"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// Release deletes the lock if this handle still owns it and reports:
// Released (this call's delete removed it), AlreadyReleased (released
// before; nothing sent) or NotOwned (the delete found another owner or no
// key, or the handle had lost the lock; nothing sent then). It blocks for
// the delete's round trip and is safe for concurrent use: concurrent calls
// share one delete and all get its outcome.
//
// ctx governs the delete this call starts. If ctx ends before the delete is
// sent, the handle still owns the lock, Release returns ctx's cause and can
// be called again. If ctx ends after the delete may have reached the server,
// the handle counts the lock as lost: the keep-alive is cancelled, the
// connection that carried the delete is fenced with CLIENT KILL, and the
// error is returned (a later Release returns NotOwned). A caller that joined
// another caller's release stops waiting when its own ctx ends; the shared
// release goes on. A server error reply (for example NOPERM) is returned and
// leaves the lock held. Without CLIENT ID/KILL permission the delete is sent
// unfenced and one warning is logged per Locks.
func (l *Lock) Release(ctx context.Context) (ReleaseOutcome, error) {
	if o := l.m().core.obs; o != nil && o.tracer != nil {
		return o.traceRelease(ctx, l)
	}
	return l.release(ctx)
}

// release is Release without its span.
func (l *Lock) release(ctx context.Context) (ReleaseOutcome, error) {
	res, err := l.request(ctx, sm.Input{Kind: sm.InputRelease})
	if err != nil {
		return 0, opError("Release", l.Key(), err)
	}
	if res.Err != nil {
		return 0, opError("Release", l.Key(), callerError(ctx, res.Err))
	}
	return releaseOutcomeOf(res.Release), nil
}

// callerError replaces the core's "caller stopped waiting" by ctx's cause.
func callerError(ctx context.Context, err error) error {
	if errors.Is(err, sm.ErrCallerCancelled) && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// execute sends a renewal or release for a caller and returns its completion.
// It blocks for the round trip.
func (l *Lock) execute(ctx context.Context, j job) event {
	ctx, cancel := l.m().commandContext(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		ev := l.executeOnce(ctx, j)
		if attempt > 0 || ev.outcome != sm.OutcomeNotSubmitted || !conn.RetriableOnFreshSession(ev.err) {
			return ev
		}
		// The session was found dead before the command was handed to it:
		// once more on a fresh session.
	}
}

func (l *Lock) executeOnce(ctx context.Context, j job) event {
	s, err := l.m().sessionFor(ctx, l.wireKey)
	if err != nil {
		return event{kind: eventDone, op: j.op, outcome: sm.OutcomeNotSubmitted, err: err}
	}
	if j.kind == sm.EffectSendRenew {
		return l.executeRenew(ctx, j, s)
	}
	unfenced := false
	if err := l.m().mayFence(ctx, s); err != nil {
		var permErr *PermissionError
		if !errors.As(err, &permErr) {
			return event{kind: eventDone, op: j.op, outcome: notSentOutcome(err), err: err}
		}
		unfenced = true
		l.m().warnUnfenced(err)
	}
	res, err := l.m().run(ctx, s, conn.ReleaseOp(l.wireKey, l.token.wire()), j.route)
	return event{kind: eventDone, op: j.op, outcome: outcomeOf(res.Owned, err), err: err, unfenced: unfenced}
}

func (l *Lock) executeRenew(ctx context.Context, j job, s conn.Session) event {
	ms, err := ttlMillis(j.ttl)
	unfenced := false
	if err == nil {
		err = l.m().core.pool.ClientAlive() // a closed rueidis client ends the keep-alive, here as in the batches
	}
	if err == nil {
		unfenced, err = l.m().renewalPermit(ctx, s) // fenced unless WithUnfencedRenewal says otherwise
	}
	if err != nil {
		return event{kind: eventDone, op: j.op, outcome: notSentOutcome(err), err: err}
	}
	if o := l.m().core.obs; o != nil && o.metrics != nil && j.due > 0 {
		o.renewalSent(l, j.due, l.m().clock.Now())
	}
	res, err := l.m().run(ctx, s, conn.ExtendOp(l.wireKey, l.token.wire(), ms), j.route)
	return event{kind: eventDone, op: j.op, outcome: outcomeOf(res.Owned, err), err: err, unfenced: unfenced}
}

// run sends op on session s, the key's current session, and follows a
// redirect through the pool. route records every session that carries it.
func (m *managed) run(ctx context.Context, s conn.Session, op conn.Op, route *conn.Route) (conn.Result, error) {
	res, err := s.Do(ctx, op, route)
	if isRedirect(err) {
		return m.core.pool.Do(ctx, op, route)
	}
	return res, err
}

// notSentOutcome classifies a failure that happened before the command was
// handed to the connection: a server error reply stays definite; anything
// else proves only that our command was not sent.
func notSentOutcome(err error) sm.Outcome {
	if outcomeOf(false, err) == sm.OutcomeDefinite {
		return sm.OutcomeDefinite
	}
	return sm.OutcomeNotSubmitted
}
