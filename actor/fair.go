package actor

import (
	"context"
	"time"

	"github.com/respire-go/respire/conn"
)

// This file is fair waiting (lease.WithFairWait) as the driver runs it: a
// fair acquisition's tries are conn's fair queue scripts with one token
// kept while it waits (its place in the queue), the waiter lease is
// renewed in pipelined batches on the node's session (fair_wait.go), and
// a fair hold's release hands the lock on to the queue at once. Push wakes
// the waiters a change may have granted, not the herd (push_fair.go).

// FairSpec makes an acquisition fair: it takes a place in the lock's queue
// on the server and is granted the lock only at the head (a semaphore's
// permit among the first limit − live waiters; a read/write lock in ticket
// order).
type FairSpec struct {
	// WaiterLease is how long the waiter's place lasts without a renewal:
	// a waiter that dies or stops delays the queue by at most this much.
	// The driver renews it every third of it while the caller waits.
	WaiterLease time.Duration
	// OnPosition, when not nil, is told the waiter's position in the
	// queue (1: the head) each time a try or a renewal of its waiter lease
	// reports a new one. It is called on the driver's goroutines and must
	// not block.
	OnPosition func(position int)
}

// kindFair marks, in a Lock's kind byte, a hold acquired through a fair
// queue: its release (and the clean-up of its try) is the queue's, which
// hands the lock on at once. Kind never reports it; Fair does.
const kindFair Kind = 1 << 7

// base returns the kind without the fair mark.
func (k Kind) base() Kind { return k &^ kindFair }

// Fair reports whether the lock was acquired through a fair queue. It does
// not block.
func (l *Lock) Fair() bool { return l.kind&kindFair != 0 }

// fairResource returns the queue in front of the lease key (with kind
// kind, without the fair mark) and, for a permit, its limit.
func fairResource(key string, kind Kind, limit int) conn.FairResource {
	switch kind.base() {
	case KindPermit:
		return conn.SemaphoreOfHolders(key, limit).Fair()
	case KindRead:
		return conn.RWLockOfKey(key).Fair(false)
	case KindWrite:
		return conn.RWLockOfKey(key).Fair(true)
	}
	r, _ := conn.FairMutex(key) // package lease refused keys without a queue before anything was sent
	return r
}

// fairResource returns the spec's queue.
func (s *AcquireSpec) fairResource() conn.FairResource {
	return fairResource(s.WireKey, s.Kind, s.Limit)
}

// waiterMillis is the spec's waiter lease in whole milliseconds.
func (f *FairSpec) waiterMillis() int64 { return max(ceilMillis(f.WaiterLease), 1) }

// afterFair records what a fair try with token left on the server, from
// its answer: queued (definite), the next try reuses token and so keeps
// its place; acquired, or a definite refusal of a single try, nothing of
// the token is queued; a try that did not run changed nothing; an unknown
// outcome settled not ours may have queued the token, which the next try
// keeps with the same token. Anything else — an unknown outcome abandoned,
// a reply that came too late — is cleaned up by the try's handle (the
// queue's release, which also drops the token's place), so the next try
// takes a fresh token.
func (t *tries) afterFair(token string, refused, acquired bool, err error) {
	definite := !t.answer.uncertain
	switch {
	case acquired:
		t.fairToken = ""
	case definite && t.answer.waiting:
		t.fairToken = token
		t.setPosition(t.answer.position)
	case definite && refused:
		t.fairToken = ""
	case definite && ranNothing(err):
	case refused:
		t.fairToken = token
	default:
		t.fairToken = ""
	}
}

// setPosition records the waiter's position and tells the caller's
// observer when it changed.
func (t *tries) setPosition(p int) {
	if w := t.waiter; w != nil {
		w.setPosition(p)
		return
	}
	if f := t.spec.Fair; f != nil && f.OnPosition != nil && p != t.position {
		f.OnPosition(p)
	}
	t.position = p
}

// leaveQueue takes token out of the queue in the background (bounded), and
// hands on a grant it may have: a fair acquisition that ends without the
// lock. A waiter whose leave fails drops out when its waiter lease ends.
func (d *Driver) leaveQueue(r conn.FairResource, token string) {
	d.goBackground(func() {
		ctx, cancel := d.bound(context.Background(), cleanupTimeout)
		defer cancel()
		if _, err := d.transport.Do(ctx, r.ReleaseOp(token), nil); err != nil {
			d.logger.Debug("lease: leaving a fair queue failed", d.KeyArgs(r.Queue().QueueKey, "error", err)...)
		}
	})
}
