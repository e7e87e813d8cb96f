package dst

import (
	"context"
	"fmt"
	"iter"
	"runtime/debug"

	"github.com/respire-go/respire/actor"
)

// This file is the simulation's actor.Spawn: every goroutine the driver
// would start, and every user call, is a task — a coroutine (iter.Pull)
// that runs on the scheduler's goroutine until it waits (Spawn.Wait) or
// ends. A waiting task is resumed by an event of its own once what it
// waits for is ready (checked after every event), so which task runs next
// is the scheduler's seeded choice, like every other event: one seed, one
// interleaving. No real goroutine, timer or channel wait exists in a run.

// task is one coroutine of a process. A coroutine whose job ended is
// kept, idle, for the next job (of any process): its stack, grown by the
// driver's calls, is not grown again.
type task struct {
	proc  *process
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	job   func() // the job to run next, while idle
	idle  bool   // its job ended; parked until the next one
	// while waiting: what it waits for; fired tells, once resumed, that
	// ready fired (else ctx ended)
	ready <-chan struct{}
	ctx   context.Context
	fired bool
	ended bool
}

// simOver unwinds a task whose schedule ended while it waited.
type simOver struct{}

// taskPanic carries a task's panic, with the task's own stack, to the
// scheduler (invariant 0).
type taskPanic struct {
	value any
	stack string
}

func (p taskPanic) String() string { return fmt.Sprint(p.value) }

// ctxWatch is one Spawn.AfterFunc registration.
type ctxWatch struct {
	proc    *process
	ctx     context.Context
	f       func()
	stopped bool
}

// tasks is the world's task runtime.
type tasks struct {
	current *task       // the task running now, nil on the scheduler's own code
	waiting []*task     // tasks parked in Wait, in the order they parked
	watches []*ctxWatch // AfterFunc registrations not yet fired or stopped
	live    []*task     // every coroutine not ended (stopped when the schedule ends)
	free    []*task     // idle coroutines, for the next jobs
	over    bool        // the schedule ended: no new task starts
}

// spawnFor is process p's actor.Spawn.
func (w *world) spawnFor(p *process) actor.Spawn { return simSpawn{w: w, p: p} }

type simSpawn struct {
	w *world
	p *process
}

func (s simSpawn) Go(f func()) { s.w.startTask(s.p, f) }
func (s simSpawn) Wait(ctx context.Context, ready <-chan struct{}) error {
	return s.w.waitTask(ctx, ready)
}
func (s simSpawn) AfterFunc(ctx context.Context, f func()) func() bool {
	return s.w.watchContext(s.p, ctx, f)
}

// startTask makes f a task of p, started by an event of its own, on an
// idle coroutine when there is one.
func (w *world) startTask(p *process, f func()) {
	if w.tasks.over {
		return // unwinding: nothing starts any more
	}
	var t *task
	if n := len(w.tasks.free); n > 0 {
		t = w.tasks.free[n-1]
		w.tasks.free[n-1] = nil
		w.tasks.free = w.tasks.free[:n-1]
	} else {
		t = w.newCoroutine()
	}
	t.proc, t.job, t.idle = p, f, false
	w.schedule(p, w.now, func() { w.runTask(t) })
}

// newCoroutine makes a coroutine that runs the jobs it is given, one at
// a time, parking idle between them.
func (w *world) newCoroutine() *task {
	t := &task{}
	t.next, t.stop = iter.Pull(func(yield func(struct{}) bool) {
		t.yield = yield
		for {
			if !t.runJob() {
				return
			}
			t.idle = true
			if !yield(struct{}{}) {
				return
			}
		}
	})
	w.tasks.live = append(w.tasks.live, t)
	return t
}

// runJob runs t's job; false when the schedule ended under it.
func (t *task) runJob() (more bool) {
	defer func() {
		if v := recover(); v != nil {
			if _, over := v.(simOver); !over {
				panic(taskPanic{value: v, stack: string(debug.Stack())})
			}
			more = false
		}
	}()
	f := t.job
	t.job = nil
	f()
	return true
}

// runTask runs t until it waits or its job ends (it is then idle).
func (w *world) runTask(t *task) {
	if t.ended || t.idle {
		return
	}
	outer := w.tasks.current
	w.tasks.current = t
	_, more := t.next()
	w.tasks.current = outer
	switch {
	case !more:
		t.ended = true
	case t.idle:
		t.proc = nil
		w.tasks.free = append(w.tasks.free, t)
	}
}

// waitTask is Spawn.Wait: it parks the current task until ready fires or
// ctx ends. Called outside a task it panics: the scheduler's own code
// (timer callbacks, completions) must never block.
func (w *world) waitTask(ctx context.Context, ready <-chan struct{}) error {
	t := w.tasks.current
	if t == nil {
		panic("dst: Spawn.Wait outside a task (a timer callback or completion must not block)")
	}
	if fired, done := readyNow(ctx, ready); fired || done {
		return waitResult(ctx, fired)
	}
	t.ready, t.ctx, t.fired = ready, ctx, false
	w.tasks.waiting = append(w.tasks.waiting, t)
	if !t.yield(struct{}{}) {
		panic(simOver{})
	}
	return waitResult(ctx, t.fired)
}

func waitResult(ctx context.Context, fired bool) error {
	if fired {
		return nil
	}
	return context.Cause(ctx)
}

// readyNow takes ready's signal if it fired, else reports whether ctx is
// done.
func readyNow(ctx context.Context, ready <-chan struct{}) (fired, done bool) {
	select {
	case <-ready:
		return true, false
	default:
	}
	return false, ctx.Err() != nil
}

// watchContext is Spawn.AfterFunc.
func (w *world) watchContext(p *process, ctx context.Context, f func()) func() bool {
	cw := &ctxWatch{proc: p, ctx: ctx, f: f}
	w.tasks.watches = append(w.tasks.watches, cw)
	return func() bool {
		if cw.stopped {
			return false
		}
		cw.stopped = true
		return true
	}
}

// wakeReady schedules the resumption of every waiting task whose wait is
// over and starts the AfterFunc tasks whose ctx ended, in the order they
// were registered; the scheduler calls it after every event.
func (w *world) wakeReady() {
	kept := w.tasks.waiting[:0]
	for _, t := range w.tasks.waiting {
		fired, done := readyNow(t.ctx, t.ready)
		if !fired && !done {
			kept = append(kept, t)
			continue
		}
		t.fired, t.ready, t.ctx = fired, nil, nil
		w.schedule(t.proc, w.now, func() { w.runTask(t) })
	}
	clear(w.tasks.waiting[len(kept):])
	w.tasks.waiting = kept
	watches := w.tasks.watches[:0]
	for _, cw := range w.tasks.watches {
		switch {
		case cw.stopped:
		case cw.ctx.Err() != nil:
			cw.stopped = true
			w.startTask(cw.proc, cw.f)
		default:
			watches = append(watches, cw)
		}
	}
	clear(w.tasks.watches[len(watches):])
	w.tasks.watches = watches
}

// stopTasks ends every coroutine when the schedule ends: a task parked
// in Wait unwinds (deferred calls run; nothing new starts), an idle one
// just ends, so no coroutine outlives the run. A panic while unwinding is
// reported as invariant 0.
func (w *world) stopTasks() {
	w.tasks.over = true
	defer func() {
		if v := recover(); v != nil {
			w.check.fail(w, 0, "panic while unwinding a task: %v", v)
		}
		w.tasks = tasks{over: true}
	}()
	for _, t := range w.tasks.live {
		if !t.ended {
			t.ended = true
			t.stop()
		}
	}
}
