package actor

import (
	"context"
	"fmt"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// AcquireSpec is one acquisition, its arguments already checked (package
// lease validates them before anything is sent).
type AcquireSpec struct {
	WireKey   string        // the key with its view's prefix
	KeyStart  int           // the length of that prefix
	TTL       time.Duration // whole milliseconds, longer than the drift margin
	KeepAlive bool          // start a keep-alive owned by the lock once acquired
	// Wait is the polling budget (0: one try); UntilDone waits as long as
	// ctx lasts instead. RetryEvery is the mean polling interval (0: the
	// default); RetryEverySet says the caller chose it (a push waiter then
	// sleeps it too, not the longer safety net).
	Wait          time.Duration
	UntilDone     bool
	RetryEvery    time.Duration
	RetryEverySet bool
	// Fenced makes every try the fencing script of package coordination
	// instead of SET NX PX; nil for a plain lease.
	Fenced *Fenced
	// OwnerSuffix is appended to each try's fresh token, making the key's
	// whole value, which every owner comparison of the lock then uses
	// (lease.WithOwner: a NUL byte and the owner's label); "" for none,
	// which costs nothing.
	OwnerSuffix string
	// Kind is what the acquisition takes: the key (KindMutex), or a
	// semaphore permit, a read hold or the write hold, WireKey then being
	// the semaphore's holders key, the lock's readers key or its writer key
	// (as conn.NewSemaphore and conn.NewRWLock name them). Limit is a
	// permit's semaphore limit (≥ 1).
	Kind  Kind
	Limit int
	// Fair, when not nil, makes the acquisition wait in the lock's queue
	// (fair.go): its tries keep one token while it waits, and the hold's
	// release hands the lock on to the queue.
	Fair *FairSpec
}

// Acquire takes spec.WireKey under a fresh token per try (SET NX PX on
// the key's session, the connection that also carries the lock's renewals
// and release), waiting as spec says, and returns the lock, or nil, nil
// when another owner held the key for the whole wait. Each try's handle
// exists before its SET is sent and decides everything that follows: a
// refusal is its Acquiring -contended-> NotAcquired (the try's Lock is then
// reused by the next try, so a refused try allocates only its token); an
// unknown outcome is settled when the caller waits (rule
// WaitRidesOutTransportErrors) and abandoned otherwise, with a clean-up in
// the background. ctx governs every command of the call and the sleeps
// between tries; once acquired, ctx no longer matters. It blocks.
func (d *Driver) Acquire(ctx context.Context, spec AcquireSpec) (*Lock, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	t := tries{d: d, spec: spec, ms: int64(spec.TTL / time.Millisecond)}
	if spec.Kind == KindWrite {
		t.markerMs = markerMillis(spec.RetryEvery)
	}
	if !spec.KeepAlive {
		// Open the key's session before the lease estimate starts: the dial
		// and handshake of a cold pool must not count against the lease (the
		// estimate still starts before the SET is written). An error here is
		// met again, and reported, by the acquisition itself. (With a
		// keep-alive, the renewal permission check of the first try opens
		// it: see tries.one.)
		_, _ = d.sessionFor(ctx, spec.WireKey)
	}
	t.poll = sm.Poll{Start: d.clock.Now(), Wait: spec.Wait, RetryEvery: spec.RetryEvery, UntilDone: spec.UntilDone}
	lock, err := t.run(ctx)
	if lock == nil && t.marker != "" {
		d.abandonMarker(spec.WireKey, t.marker) // the writer gives up: readers need not wait for its marker's end
	}
	if lock == nil && t.fairToken != "" {
		d.leaveQueue(spec.fairResource(), t.fairToken) // the waiter gives up: its place and any grant go to the next
	}
	if lock != nil && !spec.KeepAlive && d.switches {
		lock.watchForSwitch() // rule SwitchReassertsLocksWithoutKeepAlive
	}
	if lock == nil || spec.Fenced == nil {
		return lock, err
	}
	if !spec.Fenced.Reply.Unconfirmed() {
		lock.setFencing(spec.Fenced.CounterKey, spec.Fenced.Reply.FencingToken) // its guarded writes check the fence
		return lock, err
	}
	spec.Fenced.Reply.NotReplicated = true
	spec.Fenced.Reply.Released = lock.endUnreturned(ctx)
	return nil, ErrNotReplicated
}

// run tries, and waits between tries as t's spec says.
func (t *tries) run(ctx context.Context) (*Lock, error) {
	d := t.d
	if t.joinsParked() && (!t.spec.KeepAlive || t.checked || t.permit(ctx) == nil) {
		// Others of this Locks wait on the tracked key: the key was held
		// at their last read and has not changed since, so a SET NX now
		// would be refused. Join them; a change hands the key on. The
		// keep-alive's permission is checked first, here: a release that
		// carries the try (push_handover.go) sends nothing else. (When the
		// check fails, the first try below meets it again.)
		if sleep, again := t.poll.Next(d.clock.Now(), d.jitter()); again {
			return t.pushed(ctx, sleep)
		}
	}
	for {
		lock, err := t.one(ctx)
		if lock != nil || (err != nil && !t.ridesOut(ctx, err)) {
			return lock, err
		}
		sleep, again := t.poll.Next(d.clock.Now(), d.jitter())
		if !again {
			return nil, err // the last try's answer: not acquired, or its error
		}
		if t.spec.Fair != nil {
			return t.fairWaiting(ctx, sleep)
		}
		if d.push != nil && t.spec.Kind != KindWrite { // a waiting writer polls: each try refreshes its marker
			return t.pushed(ctx, sleep)
		}
		if err := Sleep(ctx, d.spawn, d.clock, sleep); err != nil {
			return nil, err
		}
	}
}

// pushed goes on with a waiting acquisition after a try that did not
// acquire, with push (push_wait.go): between tries it waits for the key's
// invalidation, or for the retry interval as a safety net.
func (t *tries) pushed(ctx context.Context, sleep time.Duration) (lock *Lock, err error) {
	// A parked waiter's tries are reachable by a release that carries its
	// try (push_handover.go): on the heap, here only, so that an
	// acquisition that does not wait allocates nothing for them.
	shared := new(tries)
	*shared = *t
	defer func() { *t = *shared }()
	return shared.parked(ctx, sleep)
}

// parked is pushed, on tries a release may reach.
func (t *tries) parked(ctx context.Context, sleep time.Duration) (lock *Lock, err error) {
	d := t.d
	var waiter *pushWaiter
	on := t.waitOn()
	defer func() { d.push.leave(on.key, waiter, lock != nil) }()
	for {
		werr := d.push.wait(ctx, t, on, sleep, t.pushedSleep(d.clock.Now(), sleep), &waiter)
		c, cerr := d.push.takeCarried(ctx, waiter)
		switch {
		case c != nil:
			lock, err = t.finishCarried(ctx, c) // a release carried its try (push_handover.go)
		case cerr != nil:
			return nil, cerr // gave its carried try up: the release steps its answer
		case werr != nil:
			return nil, werr
		default:
			lock, err = t.one(ctx)
		}
		if lock != nil || (err != nil && !t.ridesOut(ctx, err)) {
			return lock, err
		}
		var again bool
		if sleep, again = t.poll.Next(d.clock.Now(), d.jitter()); !again {
			return nil, err
		}
	}
}

// pushSafetyNetFactor is how much longer than the polling sleep a waiter
// parked on a tracked key sleeps when the caller left the retry interval at
// its default: the invalidation wakes it, and the sleep is only the net for
// a push lost on a live watcher, which the servers do not do (a broken
// watcher wakes every waiter itself). 20 × 50 ms: about one try a second.
const pushSafetyNetFactor = 20

// pushedSleep is the sleep of a waiter parked on a tracked key, given the
// polling sleep: the same with an explicit retry interval, else
// pushSafetyNetFactor times it, cut to the remaining budget (one more try
// follows, as polling).
func (t *tries) pushedSleep(now, sleep time.Duration) time.Duration {
	if t.spec.RetryEverySet {
		return sleep
	}
	long := sleep * pushSafetyNetFactor
	if t.poll.UntilDone {
		return long
	}
	return max(sleep, min(long, t.poll.Wait-(now-t.poll.Start)))
}

// one makes one try: the keep-alive's permission check if it has not
// passed yet, then the try. nil, nil is a refusal.
func (t *tries) one(ctx context.Context) (*Lock, error) {
	if t.spec.KeepAlive && !t.checked {
		if err := t.permit(ctx); err != nil {
			return nil, err
		}
	}
	lock, err := t.try(ctx)
	if lock != nil && t.spec.KeepAlive && t.d.push != nil {
		t.d.push.watchHeld(lock)
	}
	return lock, err
}

// try makes one acquisition with a fresh token, through the handle of a
// Lock made (or reused) for it: InputAcquire, then the SET (or the fenced
// script) sent right here, on the caller's goroutine, its completion
// stepped, and, when the core asks for it, the settling of an uncertain
// SET (EffectSettleAcquire). The core decides what each answer means.
func (t *tries) try(ctx context.Context) (*Lock, error) {
	lock, id, job := t.begin(ctx)
	return t.finish(ctx, lock, id, job, nil)
}

// begin makes the handle of one try (made or reused) and steps its
// InputAcquire; it returns with lock.mu held, and the job the step asked
// for (the try's send). A release of this Locks may call it for a parked
// waiter (push_handover.go), the waiter's goroutine waiting meanwhile.
func (t *tries) begin(ctx context.Context) (*Lock, sm.CallerID, job) {
	d := t.d
	lock := d.tries.get(d)
	lock.wireKey, lock.token, lock.keyStart = t.spec.WireKey, t.token(), uint16(t.spec.KeyStart)
	kind := t.spec.Kind
	if t.spec.Fair != nil {
		kind |= kindFair
	}
	lock.setKind(kind)
	t.answer = tryAnswer{}
	if t.spec.KeepAlive {
		// Shared, and it keeps no values: holding ctx would keep a
		// request's context (its timer, its values) alive for as long as
		// the lock is held, and nobody can ask for its Context.
		lock.setKeepAlive(ownedKeepAlive)
	}
	lock.renewOn(t.node)
	lock.mu.Lock()
	id := lock.newCaller(ctx)
	job := lock.step(sm.Input{Kind: sm.InputAcquire, Caller: id, TTL: t.spec.TTL, KeepAlive: t.spec.KeepAlive,
		Settle: t.settles(), Now: d.clock.Now()}, id)
	return lock, id, job
}

// finish runs job and every job its completion's step asks for, lock.mu
// held on entry, and returns the try's answer. carried, when not nil, is
// the completion of job, sent by a release of this Locks (push_handover.go,
// which counted it in d.inflight): it is stepped instead of sending job.
func (t *tries) finish(ctx context.Context, lock *Lock, id sm.CallerID, job job, carried *event) (*Lock, error) {
	d := t.d
	for job.op != 0 {
		var done event
		if carried != nil {
			done, carried = *carried, nil
		} else {
			d.inflight.Add() // Shutdown waits for the command and the step of its completion
			lock.mu.Unlock()
			done = t.execute(ctx, lock, job)
			lock.mu.Lock()
		}
		if done.kind == eventDone && done.outcome == sm.OutcomeOK && ctx.Err() != nil {
			// The SET applied but the caller gave up: never return the handle.
			lock.step(sm.Input{Kind: sm.InputCallerCancelled, Caller: id, Now: d.clock.Now()}, id)
		}
		job = jobNone
		if next, ok := lock.input(done); ok {
			job = lock.step(next, id)
		}
		d.inflight.Done()
	}
	res, _ := lock.collect(id)
	refused := lock.h.State() == sm.NotAcquired
	lock.mu.Unlock()
	switch {
	case t.spec.Fair != nil:
		t.afterFair(lock.token, refused, res.OK, res.Err)
	case t.spec.Kind == KindWrite:
		t.afterWrite(lock.token, res, refused)
	}
	switch {
	case res.OK && t.answer.unconfirmed != nil:
		return nil, endUnconfirmed(ctx, lock, t.answer.unconfirmed)
	case res.OK:
		return lock, nil
	case refused:
		d.tries.put(lock) // nothing else can reach it: the next try reuses it
		return nil, nil
	case ctx.Err() != nil:
		return nil, context.Cause(ctx) // the caller gave up; a clean-up runs in the background
	}
	return nil, res.Err
}

// execute sends the try's SET (or fenced script), or settles it.
func (t *tries) execute(ctx context.Context, lock *Lock, j job) event {
	if j.kind == sm.EffectSettleAcquire {
		return t.settle(ctx, lock, j)
	}
	cmdCtx, cancel := t.d.commandContext(ctx)
	defer cancel()
	var res conn.Result
	var err error
	if f := t.spec.Fenced; f != nil {
		res, err = f.send(cmdCtx, t.d, lock.wireKey, lock.token, t.ms, j.route)
	} else {
		res, err = t.d.acquireOn(cmdCtx, lock.wireKey, t.spec.acquireOp(lock.token, t.ms, t.markerMs), j.route)
	}
	outcome := acquireOutcome(res.Owned, err)
	t.answer.waiting, t.answer.position = res.Waiting, int(res.Holders)
	if res.Unconfirmed != nil {
		t.answer.unconfirmed = res.Unconfirmed
	}
	t.answer.uncertain = t.answer.uncertain || outcome == sm.OutcomeUncertain
	return event{kind: eventDone, op: j.op, outcome: outcome, err: err}
}

// acquireOn sends the acquisition op (SET NX PX, or the fenced script) on
// its key's session, the one that carries the lock's release and renewals
// too, once more on a fresh session when the first was found dead before
// the hand-off. It follows redirects; route records every session that
// carries it.
func (d *Driver) acquireOn(ctx context.Context, wireKey string, op conn.Op, route *conn.Route) (conn.Result, error) {
	for attempt := 0; ; attempt++ {
		s, err := d.sessionFor(ctx, wireKey)
		if err != nil {
			return conn.Result{}, err
		}
		res, err := d.run(ctx, s, op, route)
		if attempt > 0 || !conn.RetriableOnFreshSession(err) {
			return res, err
		}
	}
}

// endUnconfirmed ends the lock of a try that the primary took but that is
// no confirmed acquisition (rule SentinelAcquisitionsNeedReplicaAcks): its
// key may exist only on a node that is no longer the primary, so another
// owner could take it on the new one. The handle ends as an unreturned one
// (its keep-alive stopped, an owner-compared release), and the try fails
// with why (it matches conn.ErrNotReplicated): not submitted when the
// release deleted the key (nothing is left of the try, and a wait goes
// on), unknown otherwise (the key, if any, ends at its lease).
func endUnconfirmed(ctx context.Context, lock *Lock, why error) error {
	class, cause := conn.Uncertain, fmt.Errorf("%w; the key may stay until its lease ends", why)
	if lock.endUnreturned(ctx) {
		class, cause = conn.NotSubmitted, fmt.Errorf("%w; the key was deleted again", why)
	}
	return &conn.Error{Class: class, Op: "acquire", Err: cause}
}
