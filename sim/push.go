package sim

import (
	"slices"
	"sort"
)

// TakePushes removes and returns the messages queued for the client that
// are not replies to its commands, oldest first: tracking invalidations
// (">2 invalidate" pushes on RESP3, "__redis__:invalidate" pub/sub messages
// on a RESP2 connection REDIRECTed to), "tracking-redir-broken" pushes and
// pub/sub messages. Each element is one whole message in the protocol the
// client spoke when it was queued. It returns nil when nothing is queued
// or the client is unknown.
//
// A Server writes these to its sockets itself; in-process users (the
// deterministic simulator) call TakePushes after Exec and ExpireDue, and
// deliver, delay or drop the messages as they choose. Safe for concurrent
// use; does not block.
func (e *Engine) TakePushes(clientID int64) [][]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pushes[clientID]
	delete(e.pushes, clientID)
	return p
}

// PushTargets returns, in increasing order, the ids of the clients with
// messages queued for TakePushes. Safe for concurrent use.
func (e *Engine) PushTargets() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]int64, 0, len(e.pushes))
	for id, p := range e.pushes {
		if len(p) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// ExpireDue is the server's active expiry, which real servers run in the
// background: it deletes every key whose TTL has passed on Config.Clock,
// queues the invalidations that sends to tracking clients (as a change
// made by no client: NOLOOP does not hide it), then queues the pending
// BCAST invalidations, as a real server does before sleeping. Nothing is
// returned; take the messages with TakePushes (a Server calls ExpireDue
// every few milliseconds and writes them itself). It is cheap when no key
// can have expired. Safe for concurrent use; does not block.
func (e *Engine) ExpireDue() {
	e.mu.Lock()
	now := e.now()
	if e.nextExpiry != 0 && now > e.nextExpiry {
		e.expireKeys(now)
	}
	e.flushBroadcast()
	e.unlockAndCloseVictims(0)
}

// expireKeys deletes the keys expired at now, in db then key order, and
// recomputes nextExpiry.
func (e *Engine) expireKeys(now int64) {
	next := int64(0)
	for i := range e.dbs {
		var due []string
		for k, v := range e.dbs[i] {
			switch {
			case v.expireAt == 0:
			case now > v.expireAt:
				due = append(due, k)
			case next == 0 || v.expireAt < next:
				next = v.expireAt
			}
		}
		sort.Strings(due)
		for _, k := range due {
			delete(e.dbs[i], k)
			e.keyModified(k, 0)
		}
	}
	e.nextExpiry = next
}

// noteExpiry keeps nextExpiry a lower bound of every key's expiry time.
func (e *Engine) noteExpiry(at int64) {
	if at != 0 && (e.nextExpiry == 0 || at < e.nextExpiry) {
		e.nextExpiry = at
	}
}

// push queues one message for the client.
func (e *Engine) push(c *client, msg []byte) {
	if e.pushes == nil {
		e.pushes = map[int64][][]byte{}
	}
	if len(e.pushes[c.id]) == 0 {
		e.pushed = append(e.pushed, c.id)
	}
	e.pushes[c.id] = append(e.pushes[c.id], msg)
}

// takeAll removes the client's queued messages and returns them joined.
func (e *Engine) takeAll(id int64) []byte {
	p := e.pushes[id]
	if len(p) == 0 {
		return nil
	}
	delete(e.pushes, id)
	return slices.Concat(p...)
}

// forget drops a departing client's tracking, subscriptions and queue.
func (e *Engine) forget(c *client) {
	e.disableTracking(c)
	c.channels = nil
	delete(e.pushes, c.id)
}
