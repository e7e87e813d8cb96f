package actor

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// primarySwitched is told by the transport that a Sentinel client names a
// new primary (rule PrimarySwitchRenewsAtOnce): the old node may have
// answered renewals that never reached the new one, so every lock whose
// keep-alive runs renews at once — its renewal timer fires now, routed by
// key to the new primary — and its lease estimate counts from that
// renewal's confirmation. The transport has demoted the old node's
// sessions: their replies no longer confirm anything (see demotedReply).
//
// A lock held without keep-alive is re-asserted there (rule
// SwitchReassertsLocksWithoutKeepAlive): see reassert. Both hold for every
// kind (a permit, a read or write hold, fair or not, a fencing-token
// lock): each renews with its kind's owner-compared renewal (leaseRef.renew).
func (d *Driver) primarySwitched(_, _ string) {
	for _, l := range d.timers.armedLocks() {
		if !l.renewAtOnce() {
			l.reassert()
		}
	}
}

// renewAtOnce fires l's armed renewal timer now (the handle decides, as on
// any renewal tick: a renewal in flight settles first, a releasing lock
// sends none) and routes its keep-alive renewals by key until one answers.
// It reports whether l had a renewal timer armed.
func (l *Lock) renewAtOnce() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.renewOn("")
	seq := l.d.timers.renewalSeq(l)
	if seq == 0 {
		return false
	}
	l.step(sm.Input{Kind: sm.InputTimer, Timer: sm.TimerRenewal, Seq: seq, Now: l.d.clock.Now()}, 0)
	return true
}

// reassert confirms a lock held without keep-alive on the new primary, on
// a background task: an owner-compared reset of its expiry to the lease
// time it has left (ResetExpiry with that TTL: its kind's renewal, which
// for a permit or read hold renews a live member only), bounded by that
// time. It never creates a key or a member: a record the new primary
// lacks (the acquisition or a reset had not been replicated) or holds for
// another owner refuses it, and the lock is lost at once instead of
// believing in its estimate; a record it holds keeps the lock, whose estimate does not grow (the
// reset's TTL is the time left until the old estimate, counted once the
// key's session is had: resetExpiryUntil). A lock not Held, or whose
// estimate ran out, is left alone.
func (l *Lock) reassert() {
	d := l.d
	d.goBackground(func() {
		l.mu.Lock()
		left := l.h.RemainingEstimate(d.clock.Now())
		held := l.h.State() == sm.Held
		l.mu.Unlock()
		if !held || left < time.Millisecond {
			return
		}
		end := d.clock.Now() + left
		ctx, cancel := d.bound(d.stop, left)
		defer cancel()
		if _, err := l.resetExpiryUntil(ctx, end); err != nil && reassertNotSent(err) {
			l.reassertByRead(ctx)
		}
	})
}

// reassertNotSent reports a re-assertion's reset that was never sent: the
// user may not run CLIENT KILL (a reset is fenced, and ResetExpiry checks
// the permission first) or the key's session could not be had. The lock
// must not keep believing its estimate: it is read instead.
func reassertNotSent(err error) bool {
	var perm *PermissionError
	return errors.As(err, &perm) || conn.ClassOf(err) == conn.NotSubmitted
}

// reassertByRead confirms a lock without keep-alive on the new primary by
// an owner-compared read (GET of a key, the lease read of a permit or a
// read hold), which needs no fence permission, retried every
// pushCheckRetry until it answers or ctx (the time the lock has left)
// ends: a record missing or another owner's ends the lock at once
// (ErrOwnershipLost, as a push's read would). A record of its own keeps
// it, its estimate unchanged: on a Sentinel client the acquisition and
// every reset it counts from were acknowledged by the replicas (rules
// SentinelAcquisitionsNeedReplicaAcks, SentinelRenewalsNeedReplicaAcks),
// so the new primary's record expires no earlier.
func (l *Lock) reassertByRead(ctx context.Context) {
	d, lease := l.d, l.ref()
	for {
		s, err := d.sessionFor(ctx, lease.key)
		var res conn.Result
		if err == nil {
			res, err = d.run(ctx, s, lease.read(), nil)
		}
		switch {
		case err == nil && !lease.held(res):
			l.pushRefuted()
			return
		case err == nil, !settleRetries(err):
			return
		}
		if Sleep(ctx, d.spawn, d.clock, pushCheckRetry) != nil {
			return
		}
	}
}

// watchForSwitch arms the deadline timer of a lock acquired without
// keep-alive when the transport's primary can move (Sentinel), as its
// Context would: the switch handler finds every held lock among the armed
// ones, and reasserts those without keep-alive.
func (l *Lock) watchForSwitch() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended() {
		l.step(sm.Input{Kind: sm.InputWatch, Now: l.d.clock.Now()}, 0)
	}
}

// demotedReply turns a reply that confirmed a command (OK) on a session
// whose node has stopped being the primary since into an unknown outcome:
// the new primary may never have seen what the old one answered (rule
// PrimarySwitchRenewsAtOnce). Other outcomes pass unchanged.
func demotedReply(s conn.Session, outcome sm.Outcome, err error) (sm.Outcome, error) {
	if outcome != sm.OutcomeOK || s == nil || !s.Demoted() {
		return outcome, err
	}
	return sm.OutcomeUncertain, &conn.Error{Class: conn.Uncertain, Op: "reply", Addr: s.Node(), Session: s,
		Err: conn.ErrNotPrimary}
}

// armedLocks returns the locks with a timer armed (every lock whose
// keep-alive runs has its deadline armed), in heap order.
func (h *timerHeap) armedLocks() []*Lock {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Lock(nil), h.locks...)
}

// renewalSeq returns the Seq of l's armed renewal timer, 0 when none is
// armed; l.mu is held.
func (h *timerHeap) renewalSeq(l *Lock) uint32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return l.timers.renewSeq
}
