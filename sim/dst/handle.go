package dst

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/respire-go/respire/actor"
	sm "github.com/respire-go/respire/statemachine"
)

// handle is the user's side of one acquisition and, once it succeeded,
// of the lock the driver returned: what the user holds and what the
// checker reads the driver's belief from.
type handle struct {
	id       int64
	name     string
	proc     *process
	key      string
	keyIndex int
	spec     actor.AcquireSpec
	lock     *actor.Lock             // nil until acquired
	token    string                  // lock.Token(), once acquired
	ctx      context.Context         // the lock's Context, when the user asked for it
	kept     *actor.KeepAlive        // the keep-alive StartKeepAlive started, nil when none
	keptEnd  context.CancelCauseFunc // cancels the ctx that keep-alive was started with

	acquiredAt time.Duration // true time of the successful acquisition (-1 if never)
	keptSince  time.Duration // true time the latest keep-alive started (invariant 9)
	outcome    string        // the acquisition's outcome, once answered ("" while pending)
	prim       *primitive    // the semaphore or read/write lock it takes, nil for a mutex key
	fairQueue  string        // a fair acquisition's queue key (faircheck.go), "" for none
}

// callKind names a user call.
type callKind int

// The user calls.
const (
	callAcquire callKind = iota + 1
	callReset
	callKeepAlive
	callStopKeepAlive
	callRelease
	callClose
	callVerify
	callGuard
)

var callNames = [...]string{"?", "acquire", "reset", "keep-alive", "stop-keep-alive", "release", "close", "verify", "guard"}

// userCall is a pending user call: a task of its process running one
// call of the driver's API, cancellable (its ctx) until it returns.
type userCall struct {
	id     int64
	h      *handle
	kind   callKind
	cancel context.CancelCauseFunc
}

// errUserGaveUp is the cause of a user's cancellation.
var errUserGaveUp = errors.New("the user gave up")

// newHandle makes the record of a new acquisition of key.
func (w *world) newHandle(p *process, keyIndex int) *handle {
	id := w.id()
	h := &handle{id: id, name: "h" + strconv.FormatInt(id, 10), proc: p, key: w.keys[keyIndex], keyIndex: keyIndex,
		acquiredAt: -1}
	w.handles = append(w.handles, h)
	w.live = append(w.live, h)
	return h
}

// call starts a user call on h: run, in a task of h's process, with a ctx
// the user may cancel while the call is pending; run returns the outcome
// for the transcript. The ctx ends with the call, except a keep-alive's:
// its end would stop the keep-alive.
func (w *world) call(h *handle, kind callKind, run func(ctx context.Context) string) *userCall {
	p := h.proc
	ctx, cancel := context.WithCancelCause(context.Background())
	c := &userCall{id: w.id(), h: h, kind: kind, cancel: cancel}
	p.calls = append(p.calls, c)
	w.trace.logf(w, p, h.name, "user: %s (call %d)", callNames[kind], c.id)
	p.spawn.Go(func() {
		outcome := run(ctx)
		if kind != callKeepAlive {
			cancel(nil)
		}
		for i, x := range p.calls {
			if x == c {
				p.calls = append(p.calls[:i], p.calls[i+1:]...)
				break
			}
		}
		w.trace.logf(w, p, h.name, "user: %s (call %d) -> %s", callNames[kind], c.id, outcome)
	})
	return c
}

// hasCall reports whether a call on h is pending.
func (w *world) hasCall(h *handle) bool {
	for _, c := range h.proc.calls {
		if c.h == h {
			return true
		}
	}
	return false
}

// errText renders a call's error for the transcript ("" when nil).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// acquire starts a new handle's acquisition: with or without a wait, a
// keep-alive, a fencing token.
func (w *world) acquire(p *process, keyIndex int) {
	h := w.newHandle(p, keyIndex)
	p.current[h.key] = h
	h.spec = actor.AcquireSpec{WireKey: h.key, TTL: w.leaseTTL(), RetryEvery: 5 * time.Millisecond, RetryEverySet: true}
	switch {
	case w.opt.Liveness:
		h.spec.Wait = w.livenessBudget()
	case w.rng.IntN(2) == 0:
		h.spec.Wait = w.between(0, 100*time.Millisecond)
	}
	h.spec.KeepAlive = !w.opt.Liveness && w.rng.IntN(3) == 0
	if w.opt.giveUp {
		h.spec.Wait = 0
	}
	if w.shouldFence() {
		h.spec.Fenced = &actor.Fenced{CounterKey: counterKey(h.key)}
	}
	watch := w.rng.IntN(2) == 0 // the user asks for the lock's context
	w.maybeFair(h)
	w.call(h, callAcquire, func(ctx context.Context) string {
		lock, err := p.driver.Acquire(ctx, h.spec)
		return w.acquired(h, lock, err, watch)
	})
}

// acquired records an acquisition's answer.
func (w *world) acquired(h *handle, lock *actor.Lock, err error, watch bool) string {
	switch {
	case lock != nil:
		h.outcome, h.lock, h.token, h.acquiredAt, h.keptSince = "acquired", lock, lock.Token(), w.now, w.now
		w.stats.Acquired++
		w.countAcquired(h)
		if watch {
			h.ctx = lock.Context()
		}
		if f := h.spec.Fenced; f != nil {
			w.check.onFencingToken(w, h, w.check.scriptRunOf[h.token], f.Reply.FencingToken)
		}
		return "acquired " + tokenName(h.token)
	case err == nil:
		h.outcome = "not-acquired"
	default:
		h.outcome = "error"
	}
	if w.opt.Liveness && h.spec.Kind == actor.KindWrite {
		w.check.fail(w, 12, "writer %s gave up acquiring %s (%s%s) in a fault-free schedule while readers churned, budget %s",
			h.name, h.key, h.outcome, errText(err), h.spec.Wait)
	} else if w.opt.Liveness {
		w.check.fail(w, 7, "%s gave up acquiring %s (%s%s) in a fault-free schedule, budget %s",
			h.name, h.key, h.outcome, errText(err), h.spec.Wait)
	}
	return h.outcome + errText(err)
}

// leaseTTL draws a lease duration in whole milliseconds.
func (w *world) leaseTTL() time.Duration {
	return w.between(w.opt.LeaseMin, w.opt.LeaseMax).Truncate(time.Millisecond)
}

// userAction is one random call on a held handle.
func (w *world) userAction(h *handle) {
	l := h.lock
	if w.opt.Liveness {
		if h.acquiredAt >= 0 && w.now-h.acquiredAt >= w.opt.LeaseMin/2 && !w.hasCall(h) {
			w.release(h)
		}
		return
	}
	if w.opt.Guarded && h.prim == nil && w.rng.IntN(3) == 0 {
		w.guardWrite(h) // one call in three of a guarded schedule's mutex holders
		return
	}
	switch n := w.rng.IntN(100); {
	case n < 20:
		ttl := w.leaseTTL()
		w.call(h, callReset, func(ctx context.Context) string {
			res, err := l.ResetExpiry(ctx, ttl)
			return resultText(res, err)
		})
	case n < 35:
		w.startKeepAlive(h)
	case n < 39:
		if k := h.kept; k != nil {
			w.call(h, callStopKeepAlive, func(context.Context) string { k.Stop(); return "stopped" })
		}
	case n < 42:
		if h.keptEnd != nil {
			w.trace.logf(w, h.proc, h.name, "user: ends the keep-alive's ctx")
			h.keptEnd(errUserGaveUp)
		}
	case n < 62:
		w.release(h)
	case n < 72:
		w.close(h)
	case n < 85:
		w.call(h, callVerify, func(ctx context.Context) string {
			held, err := l.Verify(ctx)
			return strconv.FormatBool(held) + errText(err)
		})
	}
	// otherwise: keep working under the lock (the checker watches it)
}

// startKeepAlive starts a keep-alive on h, whose end the user's ctx
// causes too.
func (w *world) startKeepAlive(h *handle) {
	k := new(actor.KeepAlive)
	var c *userCall
	c = w.call(h, callKeepAlive, func(ctx context.Context) string {
		if err := h.lock.StartKeepAlive(ctx, k); err != nil {
			c.cancel(nil)
			return "error" + errText(err)
		}
		h.kept, h.keptEnd, h.keptSince = k, c.cancel, w.now
		return "running"
	})
}

// release asks the driver to release h's lock.
func (w *world) release(h *handle) {
	w.call(h, callRelease, func(ctx context.Context) string {
		res, err := h.lock.Request(ctx, sm.Input{Kind: sm.InputRelease})
		if res.Release == sm.ReleaseReleased {
			w.stats.Released++
		}
		return resultText(res, err)
	})
}

// close stops the keep-alive and releases, bounded as lease.Lock.Close
// is (the remaining estimate plus the fence timeout, on the process's
// clock), swallowing what Close swallows.
func (w *world) close(h *handle) {
	l, p := h.lock, h.proc
	w.call(h, callClose, func(ctx context.Context) string {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		t := p.clock.AfterFunc(l.RemainingEstimate()+actor.FenceTimeout, func() { cancel(context.DeadlineExceeded) })
		defer t.Stop()
		res, err := l.StopAndRelease(ctx)
		if res.Release == sm.ReleaseReleased {
			w.stats.Released++
		}
		return resultText(res, err)
	})
}

// resultText renders the driver's answer to a request.
func resultText(res sm.Result, err error) string {
	switch {
	case err != nil:
		return "error" + errText(err)
	case res.Err != nil:
		return "failed" + errText(res.Err)
	case res.Release != sm.ReleaseNone:
		return res.Release.String()
	}
	return strconv.FormatBool(res.OK)
}
