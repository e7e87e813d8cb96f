package sim

import (
	"bytes"
	"slices"
	"sort"
	"strconv"
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

// push queues one message for the client, unless a Server's push fault
// drops or holds it (a message for a client with held messages waits
// behind them).
func (e *Engine) push(c *client, msg []byte) {
	if pf := e.pf; pf != nil {
		if q, ok := pf.held[c.id]; ok {
			pf.held[c.id] = append(q, msg)
			return
		}
		if inv, ok := parseInvalidation(msg); ok {
			switch f := pf.take(c.id, inv); {
			case f == nil:
			case f.Kind == DropPush:
				return
			case f.Kind == DelayPush:
				pf.held[c.id] = [][]byte{msg}
				id := c.id
				pf.hold(f, func() { e.releaseHeld(id) })
				return
			}
		}
	}
	e.queue(c, msg)
}

// queue appends one message to the client's queue.
func (e *Engine) queue(c *client, msg []byte) {
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
	if e.pf != nil {
		delete(e.pf.held, c.id)
	}
}

// pushFaults is a Server's hook on the messages queued for its clients
// (DropPush, DelayPush), under the engine's mutex.
type pushFaults struct {
	// take finds, counts and records the first push fault matching an
	// invalidation (["invalidate", key...]) for the client; nil if none.
	take func(clientID int64, inv []string) *Fault
	// hold calls release once a DelayPush's delay is over, on a goroutine
	// of the Server (never when the Server closed first).
	hold func(f *Fault, release func())
	held map[int64][][]byte // client -> a delayed invalidation and the messages behind it
}

// setPushFaults installs a Server's push-fault hook (once).
func (e *Engine) setPushFaults(take func(int64, []string) *Fault, hold func(*Fault, func())) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pf == nil {
		e.pf = &pushFaults{take: take, hold: hold, held: map[int64][][]byte{}}
	}
}

// releaseHeld queues a client's delayed invalidation, then passes the
// messages held behind it through push again (a later fault may hold or
// drop them), and wakes the network layer.
func (e *Engine) releaseHeld(id int64) {
	e.mu.Lock()
	q := e.pf.held[id]
	delete(e.pf.held, id)
	if c := e.clients[id]; c != nil && len(q) > 0 {
		e.queue(c, q[0])
		for _, m := range q[1:] {
			e.push(c, m)
		}
	}
	e.unlockAndCloseVictims(0)
}

// The heads of a tracking invalidation: a RESP3 push, and the
// __redis__:invalidate message a subscribed RESP2 connection gets.
const (
	invalidatePush = ">2\r\n$10\r\ninvalidate\r\n"
	invalidateMsg  = "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
)

// parseInvalidation returns ["invalidate", key...] for a tracking
// invalidation (["invalidate"] for a flush's null), false for any other
// message.
func parseInvalidation(msg []byte) ([]string, bool) {
	rest, ok := bytes.CutPrefix(msg, []byte(invalidatePush))
	if !ok {
		if rest, ok = bytes.CutPrefix(msg, []byte(invalidateMsg)); !ok {
			return nil, false
		}
	}
	out := []string{"invalidate"}
	if len(rest) == 0 || rest[0] != '*' {
		return out, true // "_" (RESP3 null) or another null encoding
	}
	line, rest, _ := bytes.Cut(rest[1:], []byte("\r\n"))
	n, err := strconv.Atoi(string(line))
	for ; err == nil && n > 0; n-- {
		if len(rest) == 0 || rest[0] != '$' {
			break
		}
		line, rest, _ = bytes.Cut(rest[1:], []byte("\r\n"))
		size, err := strconv.Atoi(string(line))
		if err != nil || size < 0 || size+2 > len(rest) {
			break
		}
		out = append(out, string(rest[:size]))
		rest = rest[size+2:]
	}
	return out, true
}
