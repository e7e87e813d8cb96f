//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/conn"
)

// send runs one batch of the drainer: the idle check's PING when due, then
// every request's commands in one pipeline (one command alone: without a
// pipeline).
func (s *session) send(batch []*request) {
	ctx, cancel := batchContext(batch)
	defer cancel()
	if err := s.checkIdle(ctx); err != nil {
		for _, r := range batch {
			r.reply(nil, s.notSent("", err))
		}
		return
	}
	var results []result
	var err error
	if len(batch) == 1 && len(batch[0].wires) == 1 {
		r := batch[0]
		r.oneRes[0], err = s.w.roundTripOne(ctx, s.rc, r.wires[0])
		results = r.oneRes[:]
	} else {
		var wcs []*wireCmd
		for _, r := range batch {
			wcs = append(wcs, r.wires...)
		}
		results, err = s.w.roundTripWires(ctx, s.rc, wcs)
	}
	switch {
	case errors.Is(err, errNotHandedOff):
		for _, r := range batch {
			r.reply(nil, s.notSent("", err))
		}
		return
	case err != nil:
		s.t.retireFor(s, conn.RetiredTransportError)
		for _, r := range batch {
			r.reply(nil, &conn.Error{Class: conn.Uncertain, Addr: s.node, Session: s, Err: err})
		}
		return
	}
	s.answer(batch, results)
}

// answer hands each request its results; a command left without a reply
// makes its request Uncertain and retires the session.
func (s *session) answer(batch []*request, results []result) {
	var broken error
	for _, res := range results {
		if res.transport != nil {
			broken = res.transport
			break
		}
	}
	if broken != nil {
		s.t.retireFor(s, conn.RetiredTransportError)
		s.t.suspectNode(s.node)
	} else {
		s.touch()
	}
	next := 0
	for _, r := range batch {
		mine := results[next : next+len(r.wires)]
		next += len(r.wires)
		var err error
		for _, res := range mine {
			if res.transport != nil {
				err = &conn.Error{Class: conn.Uncertain, Addr: s.node, Session: s, Err: res.transport}
				break
			}
		}
		if err != nil {
			mine = nil
		}
		r.reply(mine, err)
	}
}

// batchContext bounds a batch by the latest deadline of its requests, or
// not at all when one of them has none (the client's timeouts still
// apply): a request whose deadline passes returned on its own already. A
// batch of one request runs under that request's ctx, whose deadline is
// the batch's (go-redis reads only a ctx's deadline, never its
// cancellation, and the ctx's values reach the user's hooks).
func batchContext(batch []*request) (context.Context, context.CancelFunc) {
	if len(batch) == 1 {
		return batch[0].ctx, noCancel
	}
	var latest time.Time
	for _, r := range batch {
		d, ok := r.ctx.Deadline()
		if !ok {
			return context.Background(), noCancel
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

func noCancel() {}

// checkIdle precedes the batch with a PING on its own round trip when the
// session had no reply for longer than the idle threshold, or its node is
// suspect: writing into a socket the server closed while idle would make
// every command uncertain. Any reply proves the socket alive; a transport
// failure proves it dead with nothing of the batch written: the session is
// retired and the batch refused with conn.ErrSessionRetired, so Do sends
// it on a fresh session (rule GoRedisDeadSessionIsSkipped).
func (s *session) checkIdle(ctx context.Context) error {
	if monoNow()-s.lastReply.Load() <= s.t.idleCheck.Load() && !s.suspect.Load() {
		return nil
	}
	res, err := s.w.roundTripOne(ctx, s.rc, newWireCmd(ctx, conn.PingCommand().Args))
	if err == nil && res.transport != nil {
		err = res.transport
	}
	if err != nil {
		s.t.retireFor(s, conn.RetiredDead)
		return errors.Join(conn.ErrSessionRetired, err)
	}
	s.suspect.Store(false)
	s.touch()
	return nil
}

// forget drops s from the transport's maps (its drainer stopped).
func (t *Transport) forget(s *session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for node, cur := range t.sessionsOf(s) {
		if cur == s {
			delete(t.sessions, node)
		}
	}
	delete(t.open, s)
}

// suspectNode makes the next batch on node's current session PING first:
// another connection of ours to node broke, which a restart, a failover or
// a kill of every client does to all of them at once.
func (t *Transport) suspectNode(node string) {
	t.mu.Lock()
	s := t.sessions[node]
	t.mu.Unlock()
	if s != nil {
		s.suspect.Store(true)
	}
}
