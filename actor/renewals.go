package actor

import (
	"context"
	"sync"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// renewal is one keep-alive renewal waiting to be sent.
type renewal struct {
	lock  *Lock
	op    sm.OpID
	ttl   time.Duration
	route *conn.Route   // the lock's Route for op (records the carrier, may abort)
	due   time.Duration // when the renewal was due (its timer's time); 0: not timer-driven
	// waiter, instead of lock, is a fair waiter whose waiter lease (held
	// with waiterToken) this renews (fair_wait.go).
	waiter      *fairWaiter
	waiterToken string
}

// done delivers the renewal's completion to its lock or its waiter.
func (rn renewal) done(res conn.Result, outcome sm.Outcome, err error, unfenced bool) {
	if rn.waiter != nil {
		rn.waiter.renewed(rn.waiterToken, res, err)
		return
	}
	rn.lock.deliverDone(rn.op, outcome, err, unfenced)
}

// request is the renewal as the session's batch carries it.
func (rn renewal) request() conn.ExtendRequest {
	if w := rn.waiter; w != nil {
		return conn.ExtendRequest{Op: w.resource.RenewOp(rn.waiterToken, w.waiterMs)}
	}
	rq := conn.ExtendRequest{Key: rn.lock.wireKey, Token: rn.lock.token, TTLMillis: ceilMillis(rn.ttl), Route: rn.route}
	if k := rn.lock.Kind(); k.member() {
		rq.Op = rn.lock.ref().renew(rq.TTLMillis) // a permit's or reader's script, in the same pipeline
	}
	return rq
}

// Bounds of a renewer: a batch carries at most maxRenewalBatch renewals and
// at most maxRenewalSenders batches are on the wire at once, so one large
// batch never holds up renewals that fall due behind it.
const (
	maxRenewalBatch   = 512
	maxRenewalSenders = 4
)

// renewer pipelines the keep-alive renewals of one node: renewals that fall
// due while batches are on the wire are sent together in the next one, with
// one DoMulti on the node's session, and each completion is delivered to its
// lock. Its senders (through the driver's Spawn) run only while renewals are pending.
// It is safe for concurrent use.
type renewer struct {
	d       *Driver
	node    string
	waiters bool // it renews fair waiters' leases (fair_wait.go), which need no fencing permission

	mu      sync.Mutex
	queue   []renewal
	senders int
}

// renewOn sends the lock's keep-alive renewals in node's batches, or routes
// them by key when node is ""; l.mu is held (or l is not shared yet). A
// lock without a keep-alive sends no timed renewals: it skips the lookup
// (KeepAlive sets the node when one starts).
func (l *Lock) renewOn(node string) {
	switch {
	case node == "":
		l.renewer = 0
	case l.keepAliveRunning() == nil:
	case l.renewer == 0 || l.renewerOf().node != node:
		l.renewer = l.d.renewerFor(node)
	}
}

// renewerOf returns the renewer the lock's keep-alive renewals go to, nil
// when they are routed by key; l.mu is held.
func (l *Lock) renewerOf() *renewer {
	if l.renewer == 0 {
		return nil
	}
	return (*l.d.renewerList.Load())[l.renewer-1]
}

// maxRenewers is how many nodes' renewers a Lock can name (its renewer is
// a uint16: 2 bytes in the Lock's tail, not a pointer); the locks of any
// node beyond are renewed routed by key.
const maxRenewers = 1<<16 - 1

// renewerFor returns node's renewer as a Lock names it: 1 + its index in
// d.renewerList, 0 when there are too many nodes to name (maxRenewers).
func (d *Driver) renewerFor(node string) uint16 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i, ok := d.renewers[node]; ok {
		return i
	}
	list := *d.renewerList.Load()
	if len(list) >= maxRenewers {
		return 0
	}
	list = append(list[:len(list):len(list)], &renewer{d: d, node: node}) // a copy: readers hold the old one
	d.renewerList.Store(&list)
	d.renewers[node] = uint16(len(list))
	return uint16(len(list))
}

// enqueue adds a renewal; it never blocks.
func (r *renewer) enqueue(rn renewal) {
	r.mu.Lock()
	r.queue = append(r.queue, rn)
	start := r.senders < maxRenewalSenders
	if start {
		r.senders++
	}
	r.mu.Unlock()
	if start {
		r.d.spawn.Go(r.drain)
	}
}

func (r *renewer) drain() {
	for {
		batch := r.take()
		if batch == nil {
			return
		}
		r.d.inflight.Add()
		r.send(batch)
		r.d.inflight.Done()
	}
}

// take removes the next batch, or retires this sender when none is pending.
func (r *renewer) take() []renewal {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 {
		r.senders--
		r.queue = nil
		return nil
	}
	n := min(len(r.queue), maxRenewalBatch)
	batch := make([]renewal, n)
	copy(batch, r.queue)
	r.queue = append(r.queue[:0], r.queue[n:]...)
	return batch
}

// renewalBound bounds a batch of keep-alive renewals (its session's open
// included) when CommandTimeout does not: a renewal still unanswered then is
// uncertain, and the lock recovers on a fresh session while its lease lasts.
const renewalBound = 30 * time.Second

// send renews one batch on the node's session, after checking (once per
// session) that it may be fenced. A session found dead before anything was
// written is replaced once.
func (r *renewer) send(batch []renewal) {
	ctx, cancel := r.d.commandContext(context.Background())
	defer cancel()
	ctx, cancelBound := r.d.bound(ctx, renewalBound) // every command the library sends on its own has a deadline
	defer cancelBound()
	for attempt := 0; ; attempt++ {
		err := r.d.closedErr()
		if err == nil {
			err = r.d.transport.ClientAlive() // a closed client ends the keep-alives
		}
		var s conn.Session
		if err == nil {
			s, err = r.d.transport.SessionFor(ctx, r.node)
		}
		unfenced := false
		if err == nil && !r.waiters {
			unfenced, err = r.d.renewalPermit(ctx, s)
		}
		if err != nil {
			for _, rn := range batch {
				rn.done(conn.Result{}, notSentOutcome(err), err, false)
			}
			return
		}
		if r.sendOn(ctx, s, batch, attempt == 0, unfenced) {
			return
		}
	}
}

// sendOn sends the batch on s and delivers every completion. When retry is
// set and s turned out dead before anything was handed to it, it delivers
// nothing and returns false.
func (r *renewer) sendOn(ctx context.Context, s conn.Session, batch []renewal, retry, unfenced bool) bool {
	requests := make([]conn.ExtendRequest, 0, len(batch))
	sent := make([]renewal, 0, len(batch))
	for _, rn := range batch {
		requests = append(requests, rn.request())
		sent = append(sent, rn)
	}
	if len(sent) == 0 {
		return true
	}
	if o := r.d.obs; o != nil && !r.waiters {
		now := r.d.clock.Now()
		for _, rn := range sent {
			o.RenewalSent(rn.lock, rn.due, now)
		}
	}
	results := s.ExtendMany(ctx, requests)
	if retry && conn.RetriableOnFreshSession(results[0].Err) {
		return false // notSendable refused the whole batch: nothing was handed off
	}
	for i, res := range results {
		rn, err := sent[i], res.Err
		if isRedirect(err) {
			res.Result, err = r.d.transport.Do(ctx, requests[i].Renewal(), rn.route)
		}
		outcome, oerr := renewalOutcome(res.Owned, err)
		if rn.waiter != nil {
			oerr = err // a waiter reads the answer itself: not owned is not an error
		}
		rn.done(res.Result, outcome, oerr, unfenced)
	}
	return true
}

// deliverDone steps the lock with a renewal's completion right on the
// sender (under the lock's mutex, as every input is):
// a completion needs no goroutine of its own, which matters when thousands
// of renewals complete together.
func (l *Lock) deliverDone(op sm.OpID, outcome sm.Outcome, err error, unfenced bool) {
	l.handle(event{kind: eventDone, op: op, outcome: outcome, err: err, unfenced: unfenced})
}
