package dst

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// HandleInfo is what a core factory learns about the handle it builds.
type HandleInfo struct {
	ID     int64
	Name   string // "h3", for messages
	Key    string
	Token  string
	Random *rand.Rand // seeded from the schedule; the core's only randomness (jitter)
}

// handle is the runtime's side of one lock handle: the core plus the timers,
// operations and user calls the runtime executes for it.
type handle struct {
	id       int64
	name     string
	proc     *process
	key      string
	keyIndex int
	token    string
	fenced   bool // acquires through the fenced script (coordination/)
	core     Core
	timers   map[int64]*event
	ops      map[int64]*opRun

	acquiredAt time.Duration // true time of the successful acquire (-1 if never)
	waitBudget time.Duration // liveness: the acquirer's wait budget
	outcome    string        // the acquire call's outcome, once resolved
	// checker bookkeeping
	uncertainWrites []*connection // connections that carried an uncertain extend or release of this handle
	uncertainSet    bool          // its acquire was uncertain
}

// userCall is a pending user call: cancellable until resolved.
type userCall struct {
	id   int64
	h    *handle
	kind InputKind
}

// newHandle builds a handle with a fresh token for key.
func (w *world) newHandle(p *process, keyIndex int) *handle {
	p.tokens++
	id := w.id()
	key := w.keys[keyIndex]
	h := &handle{id: id, name: "h" + strconv.FormatInt(id, 10), proc: p, key: key, keyIndex: keyIndex,
		timers: map[int64]*event{}, ops: map[int64]*opRun{}, acquiredAt: -1}
	h.token = p.name + "-" + strconv.Itoa(p.tokens) + "-" + strconv.FormatUint(w.rng.Uint64(), 36)
	w.trace.nameToken(h.token, h.name)
	h.core = w.newCore(HandleInfo{ID: id, Name: h.name, Key: key, Token: h.token,
		Random: rand.New(rand.NewPCG(w.rng.Uint64(), w.rng.Uint64()))})
	w.handles = append(w.handles, h)
	w.live = append(w.live, h)
	return h
}

// call starts a user call on h.
func (w *world) call(h *handle, in Input) *userCall {
	c := &userCall{id: w.id(), h: h, kind: in.Kind}
	in.Call = c.id
	h.proc.calls = append(h.proc.calls, c)
	w.input(h, in)
	return c
}

// input steps h's core with in (stamped with the process's clock) and
// executes the effects in order.
func (w *world) input(h *handle, in Input) {
	p := h.proc
	in.Now = p.local(w.now)
	if w.trace.enabled {
		w.trace.logf(w, p, h.name, "%s", inputString(in))
	}
	effects := h.core.Step(in)
	for _, e := range effects {
		w.apply(h, e)
	}
}

// apply executes one effect.
func (w *world) apply(h *handle, e Effect) {
	p := h.proc
	switch e.Kind {
	case EffSend:
		w.trace.logf(w, p, h.name, "-> send %s op %s ttl=%s", e.OpKind, opLabel(e.Op), e.TTL)
		w.startOp(h, e)
	case EffCancelOp:
		w.trace.logf(w, p, h.name, "-> cancel op %s", opLabel(e.Op))
		w.cancelOp(h.ops[e.Op])
	case EffFence:
		w.fence(h, e.Op)
	case EffArm:
		if old := h.timers[e.Timer]; old != nil {
			old.cancelled = true
		}
		timer := e.Timer
		h.timers[timer] = w.schedule(p, p.trueAt(e.At), func() {
			delete(h.timers, timer)
			w.input(h, Input{Kind: InTimer, Timer: timer})
		})
	case EffDisarm:
		if old := h.timers[e.Timer]; old != nil {
			old.cancelled = true
			delete(h.timers, e.Timer)
		}
	case EffResolve:
		w.resolve(h, e)
	case EffCancelKeepAlive:
		w.trace.logf(w, p, h.name, "-> keep-alive cancelled: %s", e.Cause)
	case EffTrace:
		if strings.Contains(e.Outcome, "-recovered->") {
			w.stats.Recoveries++
		}
		w.trace.logf(w, p, h.name, "   %s", e.Outcome)
	}
}

// resolve answers a user call.
func (w *world) resolve(h *handle, e Effect) {
	p := h.proc
	for i, c := range p.calls {
		if c.id != e.Call {
			continue
		}
		p.calls = append(p.calls[:i], p.calls[i+1:]...)
		if c.kind == InAcquire {
			h.outcome = e.Outcome
			if e.Outcome == "acquired" {
				h.acquiredAt = w.now
				w.stats.Acquired++
			}
			w.check.onAcquireResolved(w, h, e)
		}
		break
	}
	if e.Outcome == "Released" {
		w.stats.Released++
	}
	w.trace.logf(w, p, h.name, "-> resolve call %d: %s %s", e.Call, e.Outcome, e.Err)
}

func inputString(in Input) string {
	names := [...]string{"?", "acquire", "reset", "keep-alive", "stop-keep-alive", "release",
		"close", "verify", "cancel", "op-done", "fence-done", "timer"}
	s := "<- " + names[in.Kind]
	switch in.Kind {
	case InAcquire:
		s += " " + in.Key + " for " + in.Duration.String() + " wait " + in.Wait.String()
		if in.KeepAlive {
			s += " keep-alive"
		}
	case InReset:
		s += " to " + in.Duration.String()
	case InCancel:
		s += " call " + strconv.FormatInt(in.Call, 10)
	case InOpDone, InFenceDone:
		s += " op " + opLabel(in.Op) + " " + in.Result.Class.String()
		if in.Result.Owned {
			s += " owned"
		}
		if in.Result.Err != "" {
			s += " err=" + in.Result.Err
		}
	case InTimer:
		s += " " + strconv.FormatInt(in.Timer, 10)
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
