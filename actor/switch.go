package actor

import (
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
func (d *Driver) primarySwitched(_, _ string) {
	for _, l := range d.timers.armedLocks() {
		l.renewAtOnce()
	}
}

// renewAtOnce fires l's armed renewal timer now (the handle decides, as on
// any renewal tick: a renewal in flight settles first, a releasing lock
// sends none) and routes its keep-alive renewals by key until one answers.
func (l *Lock) renewAtOnce() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.renewOn("")
	seq := l.d.timers.renewalSeq(l)
	if seq == 0 {
		return
	}
	l.step(sm.Input{Kind: sm.InputTimer, Timer: sm.TimerRenewal, Seq: seq, Now: l.d.clock.Now()}, 0)
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
