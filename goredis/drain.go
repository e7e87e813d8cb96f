//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/respire-go/respire/conn"
)

// maxBatch bounds the commands one pipeline of a session carries.
const maxBatch = 512

// Request states: queued until the drainer takes it, or abandoned by a
// caller whose ctx ended first (it is then never sent); a taken request is
// answered by the drainer, or cut off by its session's fence first.
const (
	stateQueued int32 = iota
	stateTaken
	stateAbandoned
	stateAnswered
	stateCutOff // answered Uncertain by the fence; its batch may still be on the wire
)

// errFencedInFlight: the session was fenced with the command on the wire
// (rule GoRedisFenceCutsOffItsBatch).
var errFencedInFlight = errors.New("the session was fenced with the command in flight: it may have run, and can no longer run")

// request is one caller's commands, sent together and in order in one
// pipeline, and their outcome.
type request struct {
	wires   []*wireCmd
	results []result
	err     error // *conn.Error when the commands have no results
	state   atomic.Int32
	done    chan struct{}   // cap 1: receives one value once answered
	ctx     context.Context // the caller's: its deadline bounds the batch
	one     [1]*wireCmd     // wires' array for one command
	oneRes  [1]result       // results' array for one command
}

// requests recycles the requests of exchangeOne: a caller that received
// its answer puts its request back; one that gave up leaves it to the
// garbage collector (the drainer may still answer it).
var requests = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

// newRequest returns a request for ctx, queued.
func newRequest(ctx context.Context) *request {
	r := requests.Get().(*request)
	r.ctx = ctx
	r.state.Store(stateQueued)
	return r
}

// recycle puts r back once its caller read its answer.
func (r *request) recycle() {
	*r = request{done: r.done}
	requests.Put(r)
}

// answered tells r's caller that r.results or r.err hold its answer.
func (r *request) answered() { r.done <- struct{}{} }

// reply answers r, taken by the drainer, with results or err, unless its
// session's fence cut it off first (cutOff).
func (r *request) reply(results []result, err error) {
	if !r.state.CompareAndSwap(stateTaken, stateAnswered) {
		return
	}
	r.results, r.err = results, err
	r.answered()
}

// A session's Conn is used by one goroutine at a time, its owner (s.busy
// under s.mu): the drainer, or a caller that found the session idle and
// runs its own round trip (flat combining). Only a caller whose ctx can
// never end (ctx.Done() == nil) runs its own: go-redis honours no
// cancellation during I/O, so a caller whose ctx may end always waits on
// its request, never on the socket (rule GoRedisCallerNeverWaitsOnTheSocket).
// Callers that find the Conn in use queue their requests; the owner that
// ends hands what is queued to the drainer, which sends it in one pipeline.
// An idle caller pays no hand-off between goroutines; under load the
// pipelines batch many callers.

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
	if err := s.sendable(ctx, op, route); err != nil {
		return nil, err
	}
	if report {
		s.t.report(ctx, cmds...)
	}
	r := newRequest(ctx) // never recycled: its results may be its own array
	r.wires = wireCmds(ctx, cmds)
	results, err, _ := s.await(ctx, op, r)
	return results, err
}

// exchangeOne is exchange of one command: on an idle session a caller
// whose ctx cannot end sends it itself (Conn.Process), others queue it.
func (s *session) exchangeOne(ctx context.Context, op string, wc *wireCmd, route *conn.Route) (result, error) {
	if err := s.sendable(ctx, op, route); err != nil {
		return result{}, err
	}
	s.t.report(ctx, wc.command())
	if ctx.Done() == nil && s.own() {
		res, err := s.sendOwn(ctx, op, wc)
		s.disown()
		return res, err
	}
	r := newRequest(ctx)
	r.one[0] = wc
	r.wires = r.one[:]
	results, err, free := s.await(ctx, op, r)
	var res result
	if err == nil {
		res = results[0]
	}
	if free {
		r.recycle()
	}
	return res, err
}

// sendable refuses, NotSubmitted, what must not be handed to the session:
// a done ctx, a retired session, a route that aborted.
func (s *session) sendable(ctx context.Context, op string, route *conn.Route) error {
	if err := ctx.Err(); err != nil {
		return s.notSent(op, err)
	}
	if s.retired.Load() {
		return s.notSent(op, conn.ErrSessionRetired)
	}
	if !route.Carry(s) {
		return s.notSent(op, conn.ErrAborted)
	}
	return nil
}

// await queues r for the drainer and waits for its answer or ctx's end.
// free reports that neither the queue nor the drainer holds r any more
// (it was answered, or never queued): only then may it be recycled.
func (s *session) await(ctx context.Context, op string, r *request) (results []result, err error, free bool) {
	if !s.enqueue(r) {
		return nil, s.notSent(op, conn.ErrSessionRetired), true
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(stateQueued, stateAbandoned) {
			return nil, s.notSent(op, context.Cause(ctx)), false // still in the queue until taken
		}
		select {
		case <-r.done: // answered in the same moment: the answer stands
		default:
			return nil, &conn.Error{Class: conn.Uncertain, Op: op, Addr: s.node, Session: s, Err: context.Cause(ctx)}, false
		}
	}
	if r.err != nil { // a request the fence cut off may still be on the wire: not free
		return nil, withOp(r.err, op), r.state.Load() != stateCutOff
	}
	return r.results, nil, true
}

// withOp returns err with its *conn.Error's Op set to op.
func withOp(err error, op string) error {
	var e *conn.Error
	if errors.As(err, &e) {
		c := *e
		c.Op = op
		return &c
	}
	return err
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
	busy := s.busy
	s.mu.Unlock()
	if !busy {
		s.wakeDrainer()
	}
	return true
}

// wakeDrainer tells the drainer to look at the queue (or the retirement).
func (s *session) wakeDrainer() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// own makes the caller the Conn's owner if the session is live, idle and
// nothing is queued (the queue's callers came first).
func (s *session) own() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy || len(s.queue) > 0 || s.retired.Load() {
		return false
	}
	s.busy = true
	return true
}

// disown ends the caller's ownership; what was queued meanwhile, or the
// retirement, is the drainer's.
func (s *session) disown() {
	s.mu.Lock()
	s.busy = false
	wake := len(s.queue) > 0 || s.retired.Load()
	s.mu.Unlock()
	if wake {
		s.wakeDrainer()
	}
}

// sendOwn is the round trip of a caller that owns the Conn: the idle
// check, then cmd alone, classified as send classifies a batch's.
func (s *session) sendOwn(ctx context.Context, op string, wc *wireCmd) (result, error) {
	if err := s.checkIdle(ctx); err != nil {
		return result{}, s.notSent(op, err)
	}
	res, err := s.w.roundTripOne(ctx, s.rc, wc)
	if errors.Is(err, errNotHandedOff) {
		return result{}, s.notSent(op, err)
	}
	if err == nil && res.transport == nil {
		s.touch()
		return res, nil
	}
	s.t.retireFor(s, conn.RetiredTransportError)
	if err == nil {
		err = res.transport // the command went out and its reply did not come
		s.t.suspectNode(s.node)
	}
	return result{}, &conn.Error{Class: conn.Uncertain, Op: op, Addr: s.node, Session: s, Err: err}
}

// drain is the session's drainer goroutine: whenever it is woken and the
// Conn is not in a caller's hands, it takes everything queued (up to
// maxBatch commands), sends it in one pipeline and answers each request;
// once the session is retired it fails what is still queued as not
// submitted, closes the Conn and stops.
func (s *session) drain() {
	defer s.stop()
	for range s.wake {
		for {
			batch, stop := s.claim()
			if stop {
				return
			}
			if len(batch) == 0 {
				break
			}
			s.send(batch)
			s.mu.Lock()
			s.flight = nil
			clear(batch) // answered: the batch buffer holds no request
			s.busy = false
			s.mu.Unlock()
		}
	}
}

// claim makes the drainer the Conn's owner with what is queued; stop when
// the session is retired (the drainer then owns the Conn for good). Nothing
// is claimed while a caller owns the Conn: its disown wakes the drainer.
func (s *session) claim() (batch []*request, stop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		return nil, false
	}
	if s.retired.Load() {
		s.busy = true
		return nil, true
	}
	batch = s.take()
	if len(batch) > 0 {
		s.busy = true
		s.flight = batch
	}
	return batch, false
}

// take moves up to maxBatch commands' requests out of the queue, marking
// them taken; abandoned ones are dropped. s.mu is held.
func (s *session) take() []*request {
	n, cmds := 0, 0
	for n < len(s.queue) && (cmds == 0 || cmds+len(s.queue[n].wires) <= maxBatch) {
		cmds += len(s.queue[n].wires)
		n++
	}
	batch := s.batch[:0] // the drainer's: free again once the previous batch was answered
	for _, r := range s.queue[:n] {
		if r.state.CompareAndSwap(stateQueued, stateTaken) {
			batch = append(batch, r)
		}
	}
	rest := copy(s.queue, s.queue[n:])
	clear(s.queue[rest:])
	s.queue = s.queue[:rest]
	s.batch = batch
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
		if r.state.CompareAndSwap(stateQueued, stateAnswered) {
			r.err = s.notSent("", conn.ErrSessionRetired)
			r.answered()
		}
	}
	_ = s.rc.Close()
	s.t.forget(s)
	close(s.stopped)
	s.t.running.Done()
}

// cutOff answers the requests of the batch the drainer has on the wire,
// Uncertain, once the session's fence was answered: nothing of it can run
// any more (rule FenceIsFinal), so its callers need not wait for the
// socket's end, which the network may hold up to the client's ReadTimeout
// (rule GoRedisFenceCutsOffItsBatch). The drainer still reads the batch's
// replies, and drops them.
func (s *session) cutOff() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.flight {
		if r.state.CompareAndSwap(stateTaken, stateCutOff) {
			r.err = &conn.Error{Class: conn.Uncertain, Addr: s.node, Session: s, Err: errFencedInFlight}
			r.answered()
		}
	}
}
