package dst

import (
	"time"

	"github.com/respire-go/respire/statemachine"
)

// step feeds one input to the current statemachine.Handle and translates
// its effects.
func (m *machineCore) step(in statemachine.Input) {
	m.buf = m.handle.Step(in, m.buf[:0])
	for _, e := range m.buf {
		m.translate(e, in.Now)
	}
}

// translate maps one statemachine effect onto the runtime's effects.
func (m *machineCore) translate(e statemachine.Effect, now time.Duration) {
	switch e.Kind {
	case statemachine.EffectSendAcquire:
		m.opCaller[e.Op] = e.Caller
		m.out = append(m.out, Effect{Kind: EffSend, Op: m.opID(e.Op), OpKind: OpAcquire, TTL: e.TTL, Token: m.token})
	case statemachine.EffectSendRenew:
		m.opCaller[e.Op] = e.Caller
		m.out = append(m.out, Effect{Kind: EffSend, Op: m.opID(e.Op), OpKind: OpExtend, TTL: e.TTL, Fenced: true})
	case statemachine.EffectSendRelease:
		m.opCaller[e.Op] = e.Caller
		m.out = append(m.out, Effect{Kind: EffSend, Op: m.opID(e.Op), OpKind: OpRelease, Fenced: true})
	case statemachine.EffectCleanupDelete:
		id := m.opID(e.Op) | 1<<31
		m.cleanups[id] = true
		m.out = append(m.out, Effect{Kind: EffSend, Op: id, OpKind: OpRelease})
	case statemachine.EffectAbort:
		m.out = append(m.out, Effect{Kind: EffCancelOp, Op: m.opID(e.Op)})
	case statemachine.EffectFence:
		m.out = append(m.out, Effect{Kind: EffFence, Op: m.opID(e.Op)})
	case statemachine.EffectCancelKeepAlive:
		m.kaLive = false
		m.out = append(m.out, Effect{Kind: EffCancelKeepAlive, Cause: e.Ending.Cause.Err(e.Ending.Err).Error()})
	case statemachine.EffectArmTimer:
		m.seq[e.Timer] = e.Seq
		m.out = append(m.out, Effect{Kind: EffArm, Timer: int64(e.Timer), At: e.At})
	case statemachine.EffectDisarmTimer:
		m.seq[e.Timer] = 0
		m.out = append(m.out, Effect{Kind: EffDisarm, Timer: int64(e.Timer)})
	case statemachine.EffectResolve:
		m.resolve(e, now)
	case statemachine.EffectTransition:
		m.out = append(m.out, Effect{Kind: EffTrace, Outcome: e.From.String() + " -" + e.Event.String() + "-> " + e.To.String()})
	}
}

// resolve answers a caller; an unacquired attempt of a waiting acquisition
// sleeps and tries again while the budget lasts (statemachine.Poll).
func (m *machineCore) resolve(e statemachine.Effect, now time.Duration) {
	r := e.Result
	if e.Caller == m.acquireBy && m.handle.State() != statemachine.Held && r.Err == nil && !r.OK &&
		m.handle.State() == statemachine.NotAcquired {
		if sleep, again := m.poll.Next(now, 0.5); again {
			m.waiting = true
			m.out = append(m.out, Effect{Kind: EffArm, Timer: timerRetry, At: now + sleep})
			return
		}
	}
	out := Effect{Kind: EffResolve, Call: int64(e.Caller)}
	switch {
	case r.Err != nil:
		out.Outcome, out.Err = "error", r.Err.Error()
	case e.Caller == m.acquireBy && m.handle.State() != statemachine.Acquiring:
		out.Outcome = map[bool]string{true: "acquired", false: "not-acquired"}[r.OK]
		if r.OK && m.keepAlive {
			m.kaLive = true
		}
	case r.Release != statemachine.ReleaseNone:
		out.Outcome = r.Release.String()
	default:
		out.Outcome = map[bool]string{true: "ok", false: "false"}[r.OK]
		if r.OK && e.Caller == m.kaCaller {
			m.kaLive = true
			m.kaCaller = 0
		}
	}
	m.out = append(m.out, out)
}
