package goredis

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/conn"
)

// maxBatch bounds the commands one pipeline of a session carries.
const maxBatch = 512

// Request states: queued until the drainer takes it, or abandoned by a
// caller whose ctx ended first (it is then never sent).
const (
	stateQueued int32 = iota
	stateTaken
	stateAbandoned
)

// request is one caller's commands, sent together and in order in one
// pipeline, and their outcome.
type request struct {
	cmds    []conn.Command
	results []result
	err     error // *conn.Error when the commands have no results
	state   atomic.Int32
	done    chan struct{}
	ctx     context.Context // the caller's: its deadline bounds the batch
}

// exchange sends cmds (consecutive, in one pipeline) on the session and
// returns what go-redis read for each. route, when not nil, is told the
// session before the hand-off and may veto it. A returned error is a
// *conn.Error: NotSubmitted when the commands were never taken by the
// drainer (ctx done first, session retired, route aborted, found dead by
// the idle check, or a hook that sent nothing), otherwise Uncertain; a
// caller whose ctx ends after the hand-off returns at once, Uncertain, and
// the session goes on for its other callers (rule GoRedisCallerNeverWaitsOnTheSocket).
func (s *session) exchange(ctx context.Context, op string, cmds []conn.Command, route *conn.Route) ([]result, error) {
	return s.submit(ctx, op, cmds, route, true)
}

// submit is exchange; report false keeps the commands from the observer
// (ExtendMany's pipelined renewals).
func (s *session) submit(ctx context.Context, op string, cmds []conn.Command, route *conn.Route, report bool) ([]result, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.notSent(op, err)
	}
	if s.retired.Load() {
		return nil, s.notSent(op, conn.ErrSessionRetired)
	}
	if !route.Carry(s) {
		return nil, s.notSent(op, conn.ErrAborted)
	}
	if report {
		s.t.report(ctx, cmds...)
	}
	r := &request{cmds: cmds, done: make(chan struct{}), ctx: ctx}
	if !s.enqueue(r) {
		return nil, s.notSent(op, conn.ErrSessionRetired)
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(stateQueued, stateAbandoned) {
			return nil, s.notSent(op, context.Cause(ctx))
		}
		select {
		case <-r.done: // answered in the same moment: the answer stands
		default:
			return nil, &conn.Error{Class: conn.Uncertain, Op: op, Addr: s.node, Session: s, Err: context.Cause(ctx)}
		}
	}
	if r.err != nil {
		var e *conn.Error
		if errors.As(r.err, &e) {
			c := *e
			c.Op = op
			return nil, &c
		}
		return nil, r.err
	}
	return r.results, nil
}

func (s *session) notSent(op string, err error) *conn.Error {
	return &conn.Error{Class: conn.NotSubmitted, Op: op, Addr: s.node, Session: s, Err: err}
}

// enqueue queues r for the drainer; false once the session is retired.
func (s *session) enqueue(r *request) bool {
	s.mu.Lock()
	if s.retired.Load() {
		s.mu.Unlock()
		return false
	}
	s.queue = append(s.queue, r)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// drain is the session's owner goroutine: it alone uses the Conn. It
// takes everything queued (up to maxBatch commands), sends it in one
// pipeline and answers each request; once the session is retired it fails
// what is still queued as not submitted, closes the Conn and stops.
func (s *session) drain() {
	defer s.stop()
	for range s.wake {
		for {
			if s.retired.Load() {
				return
			}
			batch := s.take()
			if len(batch) == 0 {
				break
			}
			s.send(batch)
		}
	}
}

// take moves up to maxBatch commands' requests out of the queue, marking
// them taken; abandoned ones are dropped.
func (s *session) take() []*request {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, cmds := 0, 0
	for n < len(s.queue) && (cmds == 0 || cmds+len(s.queue[n].cmds) <= maxBatch) {
		cmds += len(s.queue[n].cmds)
		n++
	}
	batch := make([]*request, 0, n)
	for _, r := range s.queue[:n] {
		if r.state.CompareAndSwap(stateQueued, stateTaken) {
			batch = append(batch, r)
		}
	}
	rest := copy(s.queue, s.queue[n:])
	clear(s.queue[rest:])
	s.queue = s.queue[:rest]
	return batch
}

// stop ends the session: queued requests fail as not submitted, the Conn
// is closed (an EphemeralConn drops its socket), the transport forgets it.
func (s *session) stop() {
	s.mu.Lock()
	queued := s.queue
	s.queue = nil
	s.mu.Unlock()
	for _, r := range queued {
		if r.state.CompareAndSwap(stateQueued, stateTaken) {
			r.err = s.notSent("", conn.ErrSessionRetired)
			close(r.done)
		}
	}
	_ = s.rc.Close()
	s.t.forget(s)
	close(s.stopped)
	s.t.running.Done()
}

// send runs one batch: the idle check's PING when due, then every
// request's commands in one pipeline.
func (s *session) send(batch []*request) {
	ctx, cancel := batchContext(batch)
	defer cancel()
	if err := s.checkIdle(ctx); err != nil {
		for _, r := range batch {
			r.err = s.notSent("", err)
			close(r.done)
		}
		return
	}
	var cmds []conn.Command
	for _, r := range batch {
		cmds = append(cmds, r.cmds...)
	}
	results, err := s.w.roundTrip(ctx, s.rc, cmds)
	switch {
	case errors.Is(err, errNotHandedOff):
		for _, r := range batch {
			r.err = s.notSent("", err)
			close(r.done)
		}
		return
	case err != nil:
		s.t.retireFor(s, conn.RetiredTransportError)
		for _, r := range batch {
			r.err = &conn.Error{Class: conn.Uncertain, Addr: s.node, Session: s, Err: err}
			close(r.done)
		}
		return
	}
	s.answer(batch, results)
}

// answer hands each request its results; a command left without a reply
// makes its request Uncertain and retires the session.
func (s *session) answer(batch []*request, results []result) {
	var broken error
	next := 0
	for _, r := range batch {
		mine := results[next : next+len(r.cmds)]
		next += len(r.cmds)
		for _, res := range mine {
			if res.transport != nil {
				broken = res.transport
				r.err = &conn.Error{Class: conn.Uncertain, Addr: s.node, Session: s, Err: res.transport}
				break
			}
		}
		if r.err == nil {
			r.results = mine
		}
	}
	if broken != nil {
		s.t.retireFor(s, conn.RetiredTransportError)
		s.t.suspectNode(s.node)
	} else {
		s.touch()
	}
	for _, r := range batch {
		close(r.done)
	}
}

// batchContext bounds a batch by the latest deadline of its requests, or
// not at all when one of them has none (the client's timeouts still
// apply): a request whose deadline passes returned on its own already.
func batchContext(batch []*request) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, r := range batch {
		d, ok := r.ctx.Deadline()
		if !ok {
			return context.Background(), func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

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
	results, err := s.w.roundTrip(ctx, s.rc, []conn.Command{conn.PingCommand()})
	if err == nil && results[0].transport != nil {
		err = results[0].transport
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
