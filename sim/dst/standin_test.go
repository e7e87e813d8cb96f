package dst

import "time"

// standIn is a small test-only handle core used to exercise the runtime's
// scheduler, faults, checker and transcript independently of statemachine/.
// It follows the lock's lifecycle (acquire, hold, release) in outline only.
type standIn struct {
	info      HandleInfo
	state     string // acquiring, held, releasing, lost, released, not-acquired, cleanup
	duration  time.Duration
	stamp     time.Duration // local time taken before the latest acquire/extend was sent
	expires   time.Duration
	deadline  time.Duration // acquire wait budget end
	retry     time.Duration
	keepAlive bool // keep-alive context live
	nextOp    int64
	ops       map[int64]standInOp
	acquireBy int64 // pending acquire call
}

type standInOp struct {
	kind     OpKind
	call     int64
	stamp    time.Duration
	duration time.Duration
}

const (
	standInRetry     = 1
	standInRenew     = 2
	standInKeepAlive = 3
)

func newStandIn(info HandleInfo) Core {
	return &standIn{info: info, state: "new", ops: map[int64]standInOp{}}
}

func (s *standIn) Belief() Belief {
	return Belief{Held: s.state == "held", ExpiresLocal: s.expires, KeepAliveLive: s.keepAlive, State: s.state}
}

func (s *standIn) send(kind OpKind, call int64, now, ttl time.Duration, fenced bool) Effect {
	s.nextOp++
	id := s.info.ID*1000 + s.nextOp
	s.ops[id] = standInOp{kind: kind, call: call, stamp: now, duration: ttl}
	return Effect{Kind: EffSend, Op: id, OpKind: kind, TTL: ttl, Fenced: fenced}
}

func resolve(call int64, outcome, err string) Effect {
	return Effect{Kind: EffResolve, Call: call, Outcome: outcome, Err: err}
}

func (s *standIn) lose(cause string) []Effect {
	s.state = "lost"
	if s.keepAlive {
		s.keepAlive = false
		return []Effect{{Kind: EffCancelKeepAlive, Cause: cause}, {Kind: EffDisarm, Timer: standInRenew}}
	}
	return nil
}

func (s *standIn) Step(in Input) []Effect {
	if s.state == "held" && in.Now >= s.expires {
		out := s.lose("expired")
		return append(out, s.step(in)...)
	}
	return s.step(in)
}

func (s *standIn) step(in Input) []Effect {
	switch in.Kind {
	case InAcquire:
		s.state, s.duration, s.acquireBy, s.retry = "acquiring", in.Duration, in.Call, in.Retry
		s.deadline = in.Now + in.Wait
		s.keepAlive = in.KeepAlive
		return []Effect{s.send(OpAcquire, in.Call, in.Now, in.Duration, false)}
	case InTimer:
		return s.timer(in)
	case InOpDone:
		op, ok := s.ops[in.Op]
		if !ok {
			return nil
		}
		delete(s.ops, in.Op)
		return s.done(in, op)
	case InFenceDone:
		return nil
	case InCancel:
		for id, op := range s.ops {
			if op.call == in.Call {
				return []Effect{{Kind: EffCancelOp, Op: id}}
			}
		}
		if in.Call == s.acquireBy && s.state == "acquiring" {
			s.state = "not-acquired"
			return []Effect{{Kind: EffDisarm, Timer: standInRetry}, resolve(in.Call, "cancelled", "context canceled")}
		}
		return []Effect{resolve(in.Call, "cancelled", "context canceled")}
	}
	if s.state != "held" {
		return []Effect{resolve(in.Call, "not-owned", "")}
	}
	switch in.Kind {
	case InReset:
		return []Effect{s.send(OpExtend, in.Call, in.Now, in.Duration, true)}
	case InKeepAlive:
		s.keepAlive = true
		return []Effect{s.armRenew(), resolve(in.Call, "ok", "")}
	case InStopKeepAlive:
		s.keepAlive = false
		return []Effect{{Kind: EffDisarm, Timer: standInRenew}, resolve(in.Call, "ok", "")}
	case InRelease, InClose:
		s.state = "releasing"
		return []Effect{s.send(OpRelease, in.Call, in.Now, 0, true)}
	case InVerify:
		return []Effect{s.send(OpVerify, in.Call, in.Now, 0, false)}
	}
	return nil
}

func (s *standIn) armRenew() Effect {
	at := s.stamp + s.duration/2
	return Effect{Kind: EffArm, Timer: standInRenew, At: at}
}

func (s *standIn) timer(in Input) []Effect {
	switch in.Timer {
	case standInRetry:
		if s.state == "acquiring" {
			return []Effect{s.send(OpAcquire, s.acquireBy, in.Now, s.duration, false)}
		}
	case standInRenew:
		if s.state == "held" && s.keepAlive {
			return []Effect{s.send(OpExtend, 0, in.Now, s.duration, true),
				{Kind: EffArm, Timer: standInKeepAlive, At: s.expires}}
		}
	case standInKeepAlive:
		if s.keepAlive {
			return s.lose("keep-alive deadline passed")
		}
	}
	return nil
}

func (s *standIn) done(in Input, op standInOp) []Effect {
	r := in.Result
	switch op.kind {
	case OpAcquire:
		return s.acquired(in, op)
	case OpVerify:
		return []Effect{resolve(op.call, map[bool]string{true: "true", false: "false"}[r.Owned], r.Err)}
	case OpExtend:
		return s.extended(in, op)
	}
	switch {
	case r.Class == Definite && r.Err == "" && r.Owned:
		s.state = "released"
		out := s.lose("released")
		s.state = "released"
		return append(out, resolve(op.call, "released", ""))
	case r.Class == Definite && r.Err == "":
		out := s.lose("not owned")
		return append(out, resolve(op.call, "not-owned", ""))
	case r.Class == Uncertain:
		out := s.lose("release uncertain")
		return append(out, Effect{Kind: EffFence, Op: in.Op}, resolve(op.call, "error", r.Err))
	}
	s.state = "held"
	return []Effect{resolve(op.call, "error", r.Err)}
}

func (s *standIn) acquired(in Input, op standInOp) []Effect {
	r := in.Result
	switch {
	case r.Class == Definite && r.Owned:
		s.state, s.stamp, s.expires = "held", op.stamp, op.stamp+op.duration
		out := []Effect{resolve(op.call, "acquired", "")}
		if s.keepAlive {
			out = append(out, s.armRenew())
		}
		return out
	case r.Class == Definite && r.Err == "" && in.Now+s.retry < s.deadline:
		return []Effect{{Kind: EffArm, Timer: standInRetry, At: in.Now + s.retry}}
	case r.Class == Uncertain:
		s.state, s.keepAlive = "cleanup", false
		return []Effect{s.send(OpRelease, 0, in.Now, 0, false), resolve(op.call, "error", r.Err)}
	}
	s.state, s.keepAlive = "not-acquired", false
	return []Effect{resolve(op.call, "not-acquired", r.Err)}
}

func (s *standIn) extended(in Input, op standInOp) []Effect {
	r := in.Result
	var out []Effect
	switch {
	case s.state != "held":
	case r.Class == Definite && r.Err == "" && r.Owned:
		s.stamp, s.duration, s.expires = op.stamp, op.duration, op.stamp+op.duration
		if s.keepAlive {
			out = append(out, Effect{Kind: EffDisarm, Timer: standInKeepAlive}, s.armRenew())
		}
	case r.Class == Definite && r.Err == "":
		out = s.lose("renewal returned false")
	case r.Class == Uncertain:
		out = append(s.lose("renewal uncertain"), Effect{Kind: EffFence, Op: in.Op})
	case op.call == 0: // keep-alive renewal failed definitively
		out = s.lose("renewal failed: " + r.Err)
	}
	if op.call != 0 {
		out = append(out, resolve(op.call, map[bool]string{true: "true", false: "false"}[r.Owned], r.Err))
	}
	return out
}
