package lease

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// renewal is one keep-alive renewal waiting to be sent.
type renewal struct {
	lock *Lock
	op   sm.OpID
	ttl  time.Duration
}

// renewer pipelines the keep-alive renewals of one node: renewals that fall
// due while a batch is on the wire are sent together in the next one, with
// one DoMulti on the node's session, and each completion is delivered to its
// lock's mailbox. It runs a goroutine only while renewals are pending. It is
// safe for concurrent use.
type renewer struct {
	m    *managed
	node string

	mu      sync.Mutex
	queue   []renewal
	running bool
}

func (m *managed) renewerFor(node string) *renewer {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.renewers[node]
	if r == nil {
		r = &renewer{m: m, node: node}
		m.renewers[node] = r
	}
	return r
}

// enqueue adds a renewal; it never blocks.
func (r *renewer) enqueue(rn renewal) {
	r.mu.Lock()
	r.queue = append(r.queue, rn)
	start := !r.running
	r.running = true
	r.mu.Unlock()
	if start {
		go r.drain()
	}
}

func (r *renewer) drain() {
	for {
		r.mu.Lock()
		batch := r.queue
		r.queue = nil
		if len(batch) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		r.send(batch)
	}
}

// send renews one batch on the node's session, after checking (once per
// session) that it may be fenced.
func (r *renewer) send(batch []renewal) {
	ctx, cancel := r.m.commandContext(context.Background())
	defer cancel()
	s, err := r.m.core.pool.SessionFor(ctx, r.node)
	if err == nil {
		err = r.m.mayFence(ctx, s)
	}
	if err != nil {
		for _, rn := range batch {
			rn.lock.deliverDone(rn.op, notSentOutcome(err), err, nil)
		}
		return
	}
	requests := make([]conn.ExtendRequest, 0, len(batch))
	sent := batch[:0]
	for _, rn := range batch {
		ms, err := ttlMillis(rn.ttl)
		if err != nil || !rn.lock.noteSession(rn.op, s) {
			rn.lock.deliverDone(rn.op, sm.OutcomeNotSubmitted, errors.Join(ErrOwnershipLost, err), nil)
			continue
		}
		requests = append(requests, conn.ExtendRequest{Key: rn.lock.wireKey, Token: rn.lock.token.wire(), TTLMillis: ms})
		sent = append(sent, rn)
	}
	for i, res := range s.ExtendMany(ctx, requests) {
		rn, err := sent[i], res.Err
		if isRedirect(err) {
			res.Result, err = r.m.core.pool.Extend(ctx, requests[i].Key, requests[i].Token, requests[i].TTLMillis)
		}
		rn.lock.deliverDone(rn.op, outcomeOf(res.Owned, err), err, sessionOf(res.Result, err))
	}
}

// deliverDone reports a completion to the lock's mailbox.
func (l *Lock) deliverDone(op sm.OpID, outcome sm.Outcome, err error, s *conn.Session) {
	_ = l.mailbox.Deliver(event{kind: eventDone, op: op, outcome: outcome, err: err, session: s})
}
