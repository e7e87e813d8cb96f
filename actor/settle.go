package actor

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file is what a waiting acquisition (lease.WithWait,
// WithWaitUntilDone) does with a try that failed (rule
// WaitRidesOutTransportErrors): which errors end the wait, and how a SET
// whose outcome is unknown is settled so that the wait can go on.

// tries is one acquisition's sequence of tries: one without a wait. It lives
// on its caller's stack.
type tries struct {
	d       *Driver
	spec    AcquireSpec
	ms      int64  // spec.TTL in milliseconds
	node    string // with a keep-alive: the node whose renewal permission was checked
	checked bool   // with a keep-alive: that check passed
	poll    sm.Poll
	// A writer's tries (writer.go): the marker lease, the token whose
	// waiting marker may be on the server (the next try reuses it, to
	// refresh the marker or take the lock), and what the last try answered.
	markerMs int64
	marker   string
	answer   tryAnswer
	// A fair acquisition's tries (fair.go): the token kept while it is
	// queued (its place), its last known position, and its waiter while
	// it waits between tries (fair_wait.go).
	fairToken string
	position  int
	waiter    *fairWaiter
}

// waits reports whether the caller asked to wait.
func (t *tries) waits() bool { return t.spec.Wait > 0 || t.spec.UntilDone }

// settles reports whether an uncertain try is settled (fence, read)
// rather than abandoned: when the caller waits, for a plain lease (a read
// cannot recover a fencing token, so a fenced try is abandoned).
func (t *tries) settles() bool { return t.waits() && t.spec.Fenced == nil }

// permit checks, once, that the lock's keep-alive may run where the key
// lives (see Driver.renewalSession), before any SET is sent.
func (t *tries) permit(ctx context.Context) error {
	s, err := t.d.renewalSession(ctx, t.spec.WireKey)
	if err != nil {
		return notSentError(ctx, err)
	}
	t.node, t.checked = s.Node(), true
	return nil
}

// ridesOut reports whether a waiting acquisition goes on after a try that
// failed with err: the caller asked to wait, its ctx lasts, and a later try
// may succeed (waitRidesOut), the client still being open.
func (t *tries) ridesOut(ctx context.Context, err error) bool {
	return t.waits() && ctx.Err() == nil && waitRidesOut(err) && t.d.transport.ClientAlive() == nil
}

// waitRidesOut is the decision per class of failure (rule
// WaitRidesOutTransportErrors): a failure that changed nothing a later try
// cannot undo, and that a later try may not meet, lets the wait go on —
// not submitted (a dial refused during a restart, a session found dead
// before the hand-off), a reply that proves the SET did not run (LOADING,
// READONLY, CLUSTERDOWN, MASTERDOWN, TRYAGAIN, BUSY…), an unknown outcome
// that could not be settled (abandoned and cleaned up), a reply that came
// after the lease could have expired (cleaned up). A refusal every later
// try would get too ends it at once: another server error reply (NOPERM,
// WRONGTYPE, OOM…), a permission the keep-alive lacks, a malformed fenced
// reply, the driver or its client closed.
func waitRidesOut(err error) bool {
	var permErr *PermissionError
	switch {
	case errors.Is(err, sm.ErrAcquiredTooLate):
		return true
	case errors.As(err, &permErr), errors.Is(err, conn.ErrMalformedFencingToken),
		errors.Is(err, conn.ErrPoolClosed), errors.Is(err, conn.ErrClientClosed):
		return false
	case errors.Is(err, conn.ErrDidNotRun):
		return true
	}
	class := conn.ClassOf(err)
	return class == conn.NotSubmitted || class == conn.Uncertain
}

// settle runs EffectSettleAcquire for the try's uncertain SET: it fences
// the socket that carried it (once the kill answered, the SET has run or
// never will: rule FenceIsFinal), then reads the key on a fresh session.
// Our token is OK (the SET applied), anything else Mismatch (it never
// will), no answer Uncertain (no carrier, a carrier without identity or a
// fence the server refuses, a read refused, the driver closing, ctx or the
// wait's budget ended first). Failures that may pass (transport, dial,
// did-not-run replies such as LOADING after a restart) are retried every
// cleanupRetry. It blocks for the fence and the read.
func (t *tries) settle(ctx context.Context, lock *Lock, j job) event {
	lock.mu.Lock()
	setOn := lock.carrierOf(j.op)
	lock.mu.Unlock()
	ev := event{kind: eventSettled, op: j.op, outcome: sm.OutcomeUncertain}
	if setOn == nil || ctx.Err() != nil {
		return ev
	}
	// A cancellation, not ctx's deadline: the fence travels on the client's
	// shared pipeline connection (see Driver.bound).
	sctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	stop := t.d.spawn.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stop()
	if !t.poll.UntilDone {
		left := t.poll.Wait - (t.d.clock.Now() - t.poll.Start)
		if left <= 0 {
			return ev
		}
		timer := t.d.clock.AfterFunc(left, func() { cancel(errWaitOver) })
		defer timer.Stop()
	}
	if ours, settled := t.d.settleSet(sctx, setOn, lock.ref()); settled {
		ev.outcome = sm.OutcomeMismatch
		if ours {
			ev.outcome = sm.OutcomeOK
			// A read proves the key is on the node read, not on its
			// replicas: on a Sentinel client the lock is ended, never
			// handed out (rule SentinelAcquisitionsNeedReplicaAcks).
			if t.answer.unconfirmed == nil && t.d.switches {
				t.answer.unconfirmed = errSettledByRead
			}
		}
	}
	return ev
}

// errSettledByRead is why a try whose answer was lost, and which a read
// then found ours, is ended on a Sentinel client: a read proves the key is
// on the node read, not on its replicas (rule
// SentinelAcquisitionsNeedReplicaAcks).
var errSettledByRead = fmt.Errorf("the acquisition's answer was lost and a read found the key ours, which no replica acknowledged: %w", conn.ErrNotReplicated)

// settleSet fences setOn and reads the lease on a fresh session (see
// tries.settle: GET of a key, the lease read of a permit or a read hold);
// it reports whether the token holds it, and whether that could be found
// out before ctx ended.
func (d *Driver) settleSet(ctx context.Context, setOn conn.Session, lease leaseRef) (ours, settled bool) {
	res, _, read := d.fenceThenRead(ctx, setOn, lease.read())
	return read && lease.held(res), read
}

// settleRetries reports whether a fence or read that settles an uncertain
// SET may succeed when sent again: a kill is idempotent and a read changes
// nothing, so anything but a refusal for good is retried.
func settleRetries(err error) bool {
	switch {
	case errors.Is(err, conn.ErrNoIdentity), errors.Is(err, conn.ErrPoolClosed), errors.Is(err, conn.ErrClientClosed):
		return false
	case errors.Is(err, conn.ErrDidNotRun):
		return true
	}
	class := conn.ClassOf(err)
	return class == conn.NotSubmitted || class == conn.Uncertain
}

// acquireOutcome classifies an acquisition's answer for the handle, as
// outcomeOf does, except that a malformed fenced reply counts as uncertain:
// the script ran and may have taken the lease, so the handle cleans it up.
func acquireOutcome(ok bool, err error) sm.Outcome {
	if err != nil && errors.Is(err, conn.ErrMalformedFencingToken) {
		return sm.OutcomeUncertain
	}
	return outcomeOf(ok, err)
}

// tryPool keeps the Locks of refused tries for the next try: under
// contention most tries are refusals, and a refusal then allocates nothing
// but its token. It is a channel rather than a sync.Pool so that reuse is
// certain (see freeWaitLists).
type tryPool struct {
	once sync.Once
	free chan *Lock
}

// get returns a zero Lock of d.
func (p *tryPool) get(d *Driver) *Lock {
	p.once.Do(func() { p.free = make(chan *Lock, 64) })
	select {
	case l := <-p.free:
		l.d = d
		return l
	default:
		return &Lock{d: d}
	}
}

// put keeps l, a refused try's Lock nothing else can reach, for reuse.
func (p *tryPool) put(l *Lock) {
	l.recycle()
	select {
	case p.free <- l:
	default: // enough are kept
	}
}
