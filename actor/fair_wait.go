package actor

import (
	"context"
	"sync"
	"time"

	"github.com/respire-go/respire/conn"
)

// This file is a fair acquisition between its tries: it parks until a
// change of the lock may have granted it (push_fair.go), its waiter
// lease's renewal says it is granted or lost its place, or its sleep ends;
// and it keeps its waiter lease alive, renewed every third of it in
// pipelined batches on the node's session (a renewer of its own per node,
// which never needs the fencing permission: a renewal of a place in a
// queue whose outcome is unknown changes no lock).

// fairWaiter is one fair acquisition waiting between tries.
type fairWaiter struct {
	d        *Driver
	resource conn.FairResource
	queue    string // the queue's key: waiters of one lock share it
	watch    []waitOn
	kind     Kind // permit, read, write or mutex (no fair mark)
	limit    int  // a permit's semaphore limit
	every    time.Duration
	waiterMs int64
	onPos    func(int)
	wake     chan struct{} // cap 1: try now

	mu        sync.Mutex    // guards what follows
	token     string        // the queued token; "" while none is
	pos       int           // its last known position (1: the head), 0 unknown
	timer     Timer         // the next renewal of the waiter lease
	renewing  bool          // a renewal is on its way
	renewDone chan struct{} // closed when that renewal's answer came
	trying    bool          // a try of the token is on its way: no renewal goes out meanwhile
	tainted   bool          // a renewal's outcome was unknown: the token is given up
	stopped   bool
}

// fairWaiting goes on with a fair acquisition after a try that did not
// acquire: it waits for a change that may grant it (push), its renewal's
// word, or its sleep, and tries again — with the same token while it is
// queued — until acquired or the wait ends.
func (t *tries) fairWaiting(ctx context.Context, sleep time.Duration) (*Lock, error) {
	d := t.d
	w := d.newFairWaiter(t)
	t.waiter = w
	defer func() {
		w.stop()
		t.waiter = nil
	}()
	for {
		w.setToken(t.fairToken)
		park := sleep
		if d.push != nil {
			park = t.pushedSleep(d.clock.Now(), sleep)
		}
		if err := w.park(ctx, park); err != nil {
			return nil, err
		}
		tainted, err := w.beginTry(ctx)
		if err != nil {
			return nil, err
		}
		if tainted {
			t.fairToken, t.position = "", 0 // a renewal of it may still run: the next try queues a fresh token
		}
		lock, err := t.one(ctx)
		w.setTrying(false)
		if d.push != nil {
			d.push.fairTried(w) // the read a change deferred for this try (push_fair.go)
		}
		if lock != nil {
			if d.push != nil {
				d.push.fairGone(w)
			}
			w.setToken("")
			return lock, nil
		}
		if err != nil && !t.ridesOut(ctx, err) {
			return nil, err
		}
		var again bool
		if sleep, again = t.poll.Next(d.clock.Now(), d.jitter()); !again {
			return nil, err
		}
	}
}

// park waits for a signal (the timer of sleep signals too) or ctx's end
// (then its cause). A signal left by a timer that fired as another came
// makes the next park return at once: one try more, never one less.
func (w *fairWaiter) park(ctx context.Context, sleep time.Duration) error {
	t := w.d.clock.AfterFunc(sleep, w.signal)
	err := w.d.spawn.Wait(ctx, w.wake)
	t.Stop()
	return err
}

// newFairWaiter makes t's waiter, registers it with the push hub and
// starts its waiter lease's renewals.
func (d *Driver) newFairWaiter(t *tries) *fairWaiter {
	f := t.spec.Fair
	w := &fairWaiter{d: d, resource: t.spec.fairResource(), kind: t.spec.Kind, limit: t.spec.Limit,
		every: max(f.WaiterLease/3, time.Millisecond), waiterMs: f.waiterMillis(), onPos: f.OnPosition,
		wake: make(chan struct{}, 1), token: t.fairToken, pos: t.position}
	w.queue = w.resource.Queue().QueueKey
	w.watch = fairWatch(t.spec.WireKey, t.spec.Kind)
	if d.push != nil {
		d.push.addFair(w)
	}
	w.mu.Lock()
	w.timer = d.clock.AfterFunc(w.every, w.renew)
	w.mu.Unlock()
	return w
}

// fairWatch is what a fair waiter's push waits on: a change of the key
// that holds its grant — the mutex's key, the semaphore's holders, the
// writer key for the write hold — and for a read/write lock both of its
// keys (the writer key's change may let readers in, the readers' may let
// the writer in).
func fairWatch(wireKey string, kind Kind) []waitOn {
	switch kind.base() {
	case KindPermit:
		return []waitOn{{key: wireKey, member: true}}
	case KindRead, KindWrite:
		rw := conn.RWLockOfKey(wireKey)
		return []waitOn{{key: rw.WriterKey}, {key: rw.ReadersKey, member: true}}
	}
	return []waitOn{{key: wireKey}}
}

// setToken records the token the waiter is queued with ("" for none).
func (w *fairWaiter) setToken(token string) {
	w.mu.Lock()
	w.token = token
	if token == "" {
		w.pos = 0
	}
	w.mu.Unlock()
}

// setPosition records a position a try or a renewal reported, and tells
// the caller's observer when it changed.
func (w *fairWaiter) setPosition(p int) {
	w.mu.Lock()
	changed := p != w.pos && !w.stopped
	w.pos = p
	w.mu.Unlock()
	if changed && w.onPos != nil && p > 0 {
		w.onPos(p)
	}
}

// beginTry waits for a renewal of the waiter lease on its way to be
// answered, then marks a try on its way (setTrying(false) ends it): no
// write of the waiter's token goes out while another may still run. It
// reports whether a renewal's outcome was unknown since the last try: the
// token must then be given up (its renewal may still run; nothing of it
// can be fenced), so the waiter queues again with a fresh one, and the
// old place ends with its waiter lease.
func (w *fairWaiter) beginTry(ctx context.Context) (tainted bool, err error) {
	for {
		w.mu.Lock()
		if !w.renewing {
			w.trying, tainted, w.tainted = true, w.tainted, false
			w.mu.Unlock()
			return tainted, nil
		}
		done := w.renewDone
		w.mu.Unlock()
		if err := w.d.spawn.Wait(ctx, done); err != nil {
			return false, err
		}
	}
}

// setTrying records whether a try of the waiter's token is on its way
// (until it is settled): a renewal then waits for the next round.
func (w *fairWaiter) setTrying(on bool) {
	w.mu.Lock()
	w.trying = on
	w.mu.Unlock()
}

// position returns the last known position (0: unknown).
func (w *fairWaiter) position() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pos
}

// queuedToken returns the token the waiter is queued with, "" when none.
func (w *fairWaiter) queuedToken() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.token
}

// signal asks the waiter to try now; it never blocks.
func (w *fairWaiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// stop ends the renewals and unregisters the waiter.
func (w *fairWaiter) stop() {
	w.mu.Lock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	if w.d.push != nil {
		w.d.push.removeFair(w)
	}
}

// renew sends one renewal of the waiter lease in the node's batch of
// waiter renewals (on the clock's goroutine; it never blocks).
func (w *fairWaiter) renew() {
	w.mu.Lock()
	token := w.token
	if w.stopped || w.renewing || w.trying || token == "" {
		if !w.stopped && !w.renewing {
			w.timer = w.d.clock.AfterFunc(w.every, w.renew)
		}
		w.mu.Unlock()
		return
	}
	w.renewing, w.renewDone = true, make(chan struct{})
	w.mu.Unlock()
	w.d.goBackground(func() {
		ctx, cancel := w.d.bound(context.Background(), PushCheckTimeout)
		defer cancel()
		s, err := w.d.sessionFor(ctx, w.resource.Queue().QueueKey)
		if err != nil {
			w.renewed(token, conn.Result{}, err)
			return
		}
		w.d.waiterRenewerFor(s.Node()).enqueue(renewal{waiter: w, waiterToken: token})
	})
}

// renewed takes a renewal's answer: granted (try now), still queued (its
// position), not queued (its place is lost: the next try queues it again,
// at once); an error changes nothing (the next renewal is soon). It arms
// the next renewal.
func (w *fairWaiter) renewed(token string, res conn.Result, err error) {
	if err == nil && w.queuedToken() == token {
		switch {
		case res.Waiting:
			w.signal()
		case res.Owned:
			w.setPosition(int(res.Holders))
		default:
			w.signal()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if conn.ClassOf(err) == conn.Uncertain {
		w.tainted = true
	}
	w.renewing = false
	close(w.renewDone)
	if !w.stopped {
		w.timer = w.d.clock.AfterFunc(w.every, w.renew)
	}
}

// waiterRenewerFor returns node's renewer of fair waiter leases.
func (d *Driver) waiterRenewerFor(node string) *renewer {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiterRenewers == nil {
		d.waiterRenewers = map[string]*renewer{}
	}
	r := d.waiterRenewers[node]
	if r == nil {
		r = &renewer{d: d, node: node, waiters: true}
		d.waiterRenewers[node] = r
	}
	return r
}
