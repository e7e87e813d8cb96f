package dst

import (
	"errors"
	"strconv"
	"time"

	"github.com/respire-go/respire/statemachine"
)

// DefaultCore builds the production handle core: statemachine.Handle,
// driven exactly as the actor runtime drives it. Waiting acquisition uses
// statemachine.Poll (a fresh Handle per attempt, same token), as lease/
// does; ownership checks (Verify) are a plain GET, which never changes the
// handle.
var DefaultCore CoreFactory = newMachineCore

// timerRetry is the adapter's own timer: the sleep between acquisition
// attempts. statemachine's timers keep their own numbers (1, 2).
const timerRetry = 100

// machineCore adapts statemachine.Handle to the runtime's Core contract.
type machineCore struct {
	info       HandleInfo
	handle     *statemachine.Handle
	attempt    int64  // 1-based attempt number; op ids are attempt<<32 | OpID
	token      string // the current attempt's owner token
	poll       statemachine.Poll
	acquireBy  statemachine.CallerID
	ttl        time.Duration
	keepAlive  bool // InAcquire asked for a keep-alive
	waiting    bool // sleeping between attempts
	kaLive     bool // a keep-alive context exists and was not cancelled
	kaCaller   statemachine.CallerID
	seq        [3]uint32                                   // Seq of the armed statemachine timers
	opCaller   map[statemachine.OpID]statemachine.CallerID // ops in flight -> the caller whose ctx governs them
	cleanups   map[int64]bool                              // cleanup deletes in flight (not reported to the core)
	verifies   map[int64]int64                             // verify op -> call
	nextVerify int64
	buf        []statemachine.Effect
	out        []Effect
}

func newMachineCore(info HandleInfo) Core {
	return &machineCore{info: info, opCaller: map[statemachine.OpID]statemachine.CallerID{},
		cleanups: map[int64]bool{}, verifies: map[int64]int64{}}
}

// Belief implements Core.
func (m *machineCore) Belief() Belief {
	if m.handle == nil {
		return Belief{State: "Polling"}
	}
	deadline, held := m.handle.LeaseDeadline()
	return Belief{Held: held, ExpiresLocal: deadline, KeepAliveLive: m.kaLive, State: m.handle.State().String()}
}

func (m *machineCore) opID(op statemachine.OpID) int64 { return m.attempt<<32 | int64(op) }

// Step implements Core.
func (m *machineCore) Step(in Input) []Effect {
	m.out = m.out[:0]
	switch in.Kind {
	case InAcquire:
		m.poll = statemachine.Poll{Start: in.Now, Wait: in.Wait, RetryEvery: in.Retry}
		m.acquireBy, m.ttl, m.keepAlive = statemachine.CallerID(in.Call), in.Duration, in.KeepAlive
		m.startAttempt(in.Now)
	case InVerify:
		m.nextVerify++
		id := m.opID(0) | 1<<31 | m.nextVerify<<20
		m.verifies[id] = in.Call
		m.out = append(m.out, Effect{Kind: EffSend, Op: id, OpKind: OpVerify})
	case InCancel:
		m.cancel(in)
	case InOpDone:
		m.opDone(in)
	case InTimer:
		m.timer(in)
	default:
		m.userCall(in)
	}
	return m.out
}

// startAttempt makes one acquisition try with a fresh Handle and, after
// the first, a fresh token (as lease's waiting acquisition does).
func (m *machineCore) startAttempt(now time.Duration) {
	m.attempt++
	m.token = m.info.Token
	if m.attempt > 1 {
		m.token = m.info.Name + "-try" + strconv.FormatInt(m.attempt, 10) + "-" + strconv.FormatUint(m.info.Random.Uint64(), 36)
	}
	m.handle = &statemachine.Handle{}
	m.step(statemachine.Input{Kind: statemachine.InputAcquire, Now: now, TTL: m.ttl,
		KeepAlive: m.keepAlive, Caller: m.acquireBy})
}

// userCall forwards reset, keep-alive start/stop, release, close and the
// fence answer.
func (m *machineCore) userCall(in Input) {
	caller := statemachine.CallerID(in.Call)
	si := statemachine.Input{Now: in.Now, Caller: caller}
	switch in.Kind {
	case InReset:
		si.Kind, si.TTL = statemachine.InputResetExpiry, in.Duration
	case InKeepAlive:
		si.Kind = statemachine.InputKeepAliveStart
		m.kaCaller = caller
	case InStopKeepAlive:
		si.Kind = statemachine.InputKeepAliveStop
	case InRelease:
		si.Kind = statemachine.InputRelease
	case InClose:
		si.Kind = statemachine.InputClose
	case InFenceDone:
		si = statemachine.Input{Kind: statemachine.InputFenceDone, Now: in.Now,
			Op: statemachine.OpID(in.Op & 0x7fffffff), Err: errorOf(in.Result.Err)}
		if in.Op>>32 != m.attempt {
			return
		}
	}
	m.step(si)
}

// cancel: a user gave up waiting. The core answers parked callers; the
// runtime cancels the command the caller's context governs.
func (m *machineCore) cancel(in Input) {
	caller := statemachine.CallerID(in.Call)
	if m.waiting && caller == m.acquireBy {
		m.waiting = false
		m.out = append(m.out, Effect{Kind: EffDisarm, Timer: timerRetry},
			Effect{Kind: EffResolve, Call: in.Call, Outcome: "error", Err: statemachine.ErrCallerCancelled.Error()})
		return
	}
	for op, call := range m.verifies {
		if call == in.Call {
			m.out = append(m.out, Effect{Kind: EffCancelOp, Op: op}) // answered when the op ends
			return
		}
	}
	if m.handle == nil {
		return
	}
	m.step(statemachine.Input{Kind: statemachine.InputCallerCancelled, Now: in.Now, Caller: caller})
	for op, c := range m.opCaller {
		if c == caller {
			m.out = append(m.out, Effect{Kind: EffCancelOp, Op: m.opID(op)})
		}
	}
}

func (m *machineCore) opDone(in Input) {
	if m.cleanups[in.Op] {
		delete(m.cleanups, in.Op)
		return
	}
	if call, ok := m.verifies[in.Op]; ok {
		delete(m.verifies, in.Op)
		outcome := "false"
		if in.Result.Owned {
			outcome = "true"
		}
		m.out = append(m.out, Effect{Kind: EffResolve, Call: call, Outcome: outcome, Err: in.Result.Err})
		return
	}
	if in.Op>>32 != m.attempt {
		return
	}
	op := statemachine.OpID(in.Op & 0x7fffffff)
	delete(m.opCaller, op)
	m.step(statemachine.Input{Kind: statemachine.InputCommandDone, Now: in.Now, Op: op,
		Outcome: outcomeOf(in.Result), Err: errorOf(in.Result.Err), Unfenced: in.Result.NoIdentity})
}

func outcomeOf(r OpResult) statemachine.Outcome {
	switch {
	case r.Class == NotSubmitted:
		return statemachine.OutcomeNotSubmitted
	case r.Class == Uncertain:
		return statemachine.OutcomeUncertain
	case r.Err != "":
		return statemachine.OutcomeDefinite
	case r.Owned:
		return statemachine.OutcomeOK
	}
	return statemachine.OutcomeMismatch
}

func errorOf(text string) error {
	if text == "" {
		return nil
	}
	return errors.New(text)
}

func (m *machineCore) timer(in Input) {
	if in.Timer == timerRetry {
		if m.waiting {
			m.waiting = false
			m.startAttempt(in.Now)
		}
		return
	}
	t := statemachine.Timer(in.Timer)
	m.step(statemachine.Input{Kind: statemachine.InputTimer, Now: in.Now, Timer: t, Seq: m.seq[t]})
}
