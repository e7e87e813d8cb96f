package conn

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// This file is the drainer of a link whose Conn does not pipeline (go-redis'
// Conn), and of a session's link on a PerCallerWriter (rueidis, valkey-go):
// one Do at a time on the socket. A
// caller whose ctx can never end (ctx.Done() == nil), or any caller on a
// pipelined Conn (which returns at the ctx's end by itself), and who finds
// the link idle sends its own commands (flat combining: no hand-off between
// goroutines); every other caller
// queues a request and waits on it — never on the socket, whose client may
// not notice a cancellation — so that a caller whose ctx ends after the
// hand-off returns at once, Uncertain, while the batch goes on for the
// others. On a Conn that is a Leaver (its round trip runs on a goroutine of
// the Conn's, which its caller may leave) a caller whose ctx can end and
// who finds the link idle, no idle PING due, also sends its own commands:
// when it leaves at a cancellation the round trip goes on and the link
// stays owned until the Conn reports its end. The drainer takes everything queued (up to maxBatch commands),
// sends it in one pipeline under a deadline and hands each request its own
// replies.
//
// Why a session on a PerCallerWriter (rueidis, valkey-go) is drained too:
// rueidis writes whatever its ring holds and flushes as soon as the ring is
// empty, and a caller that queues a command readies its writer, which runs
// next on the caller's P once the caller parks — so 64 callers each handing
// their own command cost about one write syscall per command (0.8 a pair
// measured), the most expensive thing a pair does on a shared 2-core host.
// Drained, the commands queued while a round trip is on the wire go out as
// one pipeline when it ends (0.08 writes a pair; see docs/architecture.md,
// "64 goroutines").

// maxBatch bounds the commands one pipeline of a drainer carries.
const maxBatch = 512

// drainBound bounds a batch whose requests carry no deadline of their own:
// every Do the engine makes on its own goroutine has a deadline.
const drainBound = 10 * time.Second

// Request states: queued until the drainer takes it, or abandoned by a
// caller whose ctx ended first (it is then never sent); a taken request is
// answered by the drainer, or cut off by its link's fence first.
const (
	stateQueued int32 = iota
	stateTaken
	stateAbandoned
	stateAnswered
	stateCutOff // answered Uncertain by the fence; its batch may still be on the wire
)

// errFencedInFlight: the link was fenced with the command on the wire.
var errFencedInFlight = errors.New("the session was fenced with the command in flight: it may have run, and can no longer run")

// request is one caller's commands, sent together and in order in one
// pipeline, and their outcome.
type request struct {
	cmds    []Command
	replies []Reply
	err     error // the transport error when some reply is missing
	state   atomic.Int32
	done    chan struct{}   // cap 1: receives one value once answered
	ctx     context.Context // the caller's: its deadline bounds the batch
}

// requests recycles requests: a caller that received its answer puts its
// request back; one that gave up leaves it to the garbage collector (the
// drainer may still answer it).
var requests = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

// drainer is the batching half of a link.
type drainer struct {
	l       *link
	mu      sync.Mutex
	busy    bool // the Conn is in use: by the drainer, or by a caller (flat combining)
	queue   []*request
	batch   []*request    // the drainer's batch buffer
	flight  []*request    // the batch on the wire, for cutOff
	wake    chan struct{} // cap 1: the queue grew, or the link retired
	stopped chan struct{} // closed once the drainer ended and the Conn is closed
	leaver  Leaver        // the Conn, when a caller may leave its round trip; nil otherwise
	ended   func(error)   // leftEnded, made once
}

// newDrainer starts l's drainer on a task of the engine.
func newDrainer(l *link) *drainer {
	d := &drainer{l: l, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	if lv, ok := l.conn.(Leaver); ok {
		d.leaver, d.ended = lv, d.leftEnded
	}
	l.e.running.Add()
	l.e.spawn.Go(d.run)
	return d
}

// wakeUp tells the drainer to look at the queue or the retirement.
func (d *drainer) wakeUp() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// exchange runs cmds through the drainer (or, flat combining, on the
// caller's goroutine): see link.exchange.
func (d *drainer) exchange(ctx context.Context, op string, cmds []Command, replies []Reply, carrier Session) error {
	if (ctx.Done() == nil || d.l.pipelined) && d.own() {
		err := d.sendOwn(ctx, op, cmds, replies, carrier)
		d.disown()
		return err
	}
	if ctx.Done() != nil && d.leaver != nil && d.own() {
		if !d.l.idleDue() {
			return d.sendLeaving(ctx, op, cmds, replies, carrier)
		}
		d.disown() // the drainer PINGs first, on a goroutine of its own
	}
	r := requests.Get().(*request)
	r.cmds, r.replies, r.ctx = cmds, replies, ctx
	r.state.Store(stateQueued)
	err, free := d.await(ctx, op, r, carrier)
	if free {
		*r = request{done: r.done}
		requests.Put(r)
	}
	return err
}

// sendOwn is the round trip of a caller that owns the Conn: the idle
// check, then its commands. On a pipelined Conn its ctx may end: the client
// returns at once, and the socket is fine (as in link.hand).
func (d *drainer) sendOwn(ctx context.Context, op string, cmds []Command, replies []Reply, carrier Session) error {
	l := d.l
	if err := l.checkIdle(ctx); err != nil {
		return l.notSent(op, carrier, err)
	}
	if err := l.conn.Do(ctx, cmds, replies); err != nil {
		return l.failed(ctx, op, err, carrier, l.pipelined)
	}
	l.touch()
	return nil
}

// sendLeaving is the round trip of a caller that owns a Leaver and whose
// ctx may end: it returns at once, Uncertain, when ctx is cancelled after
// the hand-off, the round trip going on (leftEnded ends the ownership), as
// a queued caller would; a deadline or a Close breaks the connection, as
// on the drainer's round trip.
func (d *drainer) sendLeaving(ctx context.Context, op string, cmds []Command, replies []Reply, carrier Session) error {
	l := d.l
	err, left := d.leaver.DoOrLeave(ctx, cmds, replies, d.ended)
	if left {
		return &Error{Class: Uncertain, Op: op, Addr: l.node, Session: carrier, Err: err}
	}
	defer d.disown()
	if err != nil {
		if errors.Is(err, ErrNotWritten) && ctx.Err() != nil && l.conn.Err() == nil {
			return l.notSent(op, carrier, context.Cause(ctx)) // refused before the hand-off: the link is fine
		}
		return l.failed(ctx, op, err, carrier, false)
	}
	l.touch()
	return nil
}

// leftEnded is told that the round trip a caller left ended: its failure
// retires the link as the drainer's would; the Conn is the drainer's again.
func (d *drainer) leftEnded(err error) {
	if err != nil {
		d.l.failed(context.Background(), "", err, nil, false)
	} else {
		d.l.touch()
	}
	d.disown()
}

// await queues r and waits for its answer or ctx's end. free reports that
// neither the queue nor the drainer holds r any more (it was answered, or
// never queued): only then may it be recycled. The replies slice belongs
// to the caller again only when free, or when the answer came.
func (d *drainer) await(ctx context.Context, op string, r *request, carrier Session) (err error, free bool) {
	l := d.l
	if !d.enqueue(r) {
		return l.notSent(op, carrier, ErrSessionRetired), true
	}
	if werr := l.e.spawn.Wait(ctx, r.done); werr != nil {
		if r.state.CompareAndSwap(stateQueued, stateAbandoned) {
			return l.notSent(op, carrier, werr), false // still in the queue until taken
		}
		if r.state.CompareAndSwap(stateTaken, stateAbandoned) {
			// On the wire: the drainer will not touch r's replies any more,
			// but its batch may still be writing r's commands (the caller
			// must not reuse them: the error is Uncertain).
			return &Error{Class: Uncertain, Op: op, Addr: l.node, Session: carrier, Err: werr}, false
		}
		_ = l.e.spawn.Wait(context.Background(), r.done) // answered (or cut off) in the same moment: the answer stands, and is sent without waiting
	}
	if r.err != nil {
		e := r.err.(*Error)
		c := *e
		c.Op, c.Session = op, carrier
		return &c, r.state.Load() != stateCutOff // a request the fence cut off may still be on the wire
	}
	return nil, true
}

// enqueue queues r; false once the link is retired.
func (d *drainer) enqueue(r *request) bool {
	d.mu.Lock()
	if d.l.retired.Load() {
		d.mu.Unlock()
		return false
	}
	d.queue = append(d.queue, r)
	busy := d.busy
	d.mu.Unlock()
	if !busy {
		d.wakeUp()
	}
	return true
}

// own makes the caller the Conn's owner if the link is live, idle and
// nothing is queued (the queue's callers came first).
func (d *drainer) own() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy || len(d.queue) > 0 || d.l.retired.Load() {
		return false
	}
	d.busy = true
	return true
}

// disown ends the caller's ownership; what was queued meanwhile, or the
// retirement, is the drainer's.
func (d *drainer) disown() {
	d.mu.Lock()
	d.busy = false
	wake := len(d.queue) > 0 || d.l.retired.Load()
	d.mu.Unlock()
	if wake {
		d.wakeUp()
	}
}

// run is the drainer's task: whenever it is woken and the Conn is not in a
// caller's hands, it takes everything queued, sends it in one pipeline and
// answers each request; once the link is retired it fails what is still
// queued as not submitted, closes the Conn and stops.
func (d *drainer) run() {
	defer d.stop()
	for {
		if d.l.e.spawn.Wait(context.Background(), d.wake) != nil {
			return
		}
		for {
			batch, stop := d.claim()
			if stop {
				return
			}
			if len(batch) == 0 {
				break
			}
			d.send(batch)
			d.mu.Lock()
			d.flight = nil
			clear(batch) // answered: the batch buffer holds no request
			d.busy = false
			d.mu.Unlock()
		}
	}
}

// claim makes the drainer the Conn's owner with what is queued; stop once
// the link is retired (the drainer then owns the Conn for good).
func (d *drainer) claim() (batch []*request, stop bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy {
		return nil, false
	}
	if d.l.retired.Load() {
		d.busy = true
		return nil, true
	}
	batch = d.take()
	if len(batch) > 0 {
		d.busy = true
		d.flight = batch
	}
	return batch, false
}

// take moves up to maxBatch commands' requests out of the queue, marking
// them taken; abandoned ones are dropped. d.mu is held.
func (d *drainer) take() []*request {
	n, cmds := 0, 0
	for n < len(d.queue) && (cmds == 0 || cmds+len(d.queue[n].cmds) <= maxBatch) {
		cmds += len(d.queue[n].cmds)
		n++
	}
	batch := d.batch[:0]
	for _, r := range d.queue[:n] {
		if r.state.CompareAndSwap(stateQueued, stateTaken) {
			batch = append(batch, r)
		}
	}
	rest := copy(d.queue, d.queue[n:])
	clear(d.queue[rest:])
	d.queue = d.queue[:rest]
	d.batch = batch
	return batch
}

// stop ends the drainer: queued requests fail as not submitted, the Conn
// is closed, the engine forgets the link.
func (d *drainer) stop() {
	d.mu.Lock()
	queued := d.queue
	d.queue = nil
	d.mu.Unlock()
	for _, r := range queued {
		if r.state.CompareAndSwap(stateQueued, stateAnswered) {
			r.err = d.l.notSent("", nil, ErrSessionRetired)
			r.done <- struct{}{}
		}
	}
	d.l.closeConn()
	close(d.stopped)
	d.l.e.running.Done()
}

// answer answers batch[i], taken by the drainer, with its part of the
// batch's replies and err, unless its caller left or the fence cut it off
// first (then nothing of it is touched: its caller may reuse its replies).
// It leaves the batch on the wire (d.flight, the same slice) under d.mu
// first: an answered request goes back to the pool and may be taken by
// another link's drainer at once, where cutOff must not reach it.
func (d *drainer) answer(batch []*request, i int, replies []Reply, err error) {
	r := batch[i]
	d.mu.Lock()
	batch[i] = nil
	answered := r.state.CompareAndSwap(stateTaken, stateAnswered)
	d.mu.Unlock()
	if !answered {
		return
	}
	copy(r.replies, replies)
	r.err = err
	r.done <- struct{}{}
}

// send runs one batch: the idle check's PING when due, then every
// request's commands in one pipeline under the batch's deadline.
func (d *drainer) send(batch []*request) {
	l := d.l
	ctx, cancel := d.batchContext(batch)
	defer cancel()
	if err := l.checkIdle(ctx); err != nil {
		for i := range batch {
			d.answer(batch, i, nil, l.notSent("", nil, err))
		}
		return
	}
	var cmds []Command
	var replies []Reply
	if len(batch) == 1 {
		cmds, replies = batch[0].cmds, make([]Reply, len(batch[0].cmds))
	} else {
		for _, r := range batch {
			cmds = append(cmds, r.cmds...)
		}
		replies = make([]Reply, len(cmds))
	}
	err := l.conn.Do(ctx, cmds, replies)
	var failure *Error
	if err != nil {
		failure = l.failed(ctx, "", err, nil, l.pipelined) // a pipelined client left the batch at its ctx's end: the socket is fine
	} else {
		l.touch()
	}
	next := 0
	for i, r := range batch {
		mine := replies[next : next+len(r.cmds)]
		next += len(r.cmds)
		if failure != nil && !answered(mine) {
			d.answer(batch, i, nil, failure)
			continue
		}
		d.answer(batch, i, mine, nil)
	}
}

// answered reports whether every command of a request got its reply.
func answered(replies []Reply) bool {
	for _, r := range replies {
		if r.Kind == 0 {
			return false
		}
	}
	return true
}

// batchContext bounds a batch: by its one request's ctx (whose values reach
// the client's hooks) when that has a deadline, by the latest deadline of
// its requests when all have one, else by drainBound. A request whose
// deadline passed returned on its own already.
func (d *drainer) batchContext(batch []*request) (context.Context, context.CancelFunc) {
	e := d.l.e
	if e.clock != Clock(realTime) {
		return Bound(e.clock, context.Background(), drainBound)
	}
	if len(batch) == 1 {
		if _, ok := batch[0].ctx.Deadline(); ok {
			return batch[0].ctx, func() {}
		}
	}
	var latest time.Time
	for _, r := range batch {
		dl, ok := r.ctx.Deadline()
		if !ok {
			return context.WithTimeout(context.Background(), drainBound)
		}
		if dl.After(latest) {
			latest = dl
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// cutOff answers the requests of the batch on the wire, Uncertain, once
// the link's fence was answered: nothing of it can run any more, so its
// callers need not wait for the socket's end. The drainer still reads the
// batch's replies, and drops them.
func (d *drainer) cutOff() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.flight {
		if r != nil && r.state.CompareAndSwap(stateTaken, stateCutOff) {
			r.err = &Error{Class: Uncertain, Addr: d.l.node, Err: errFencedInFlight}
			r.done <- struct{}{}
		}
	}
}

// queued appends the arguments of the commands queued and not yet taken
// (copies), for tests that hold a batch in flight.
func (d *drainer) queued(out [][]string) [][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.queue {
		if r.state.Load() != stateQueued {
			continue
		}
		for _, c := range r.cmds {
			out = append(out, append([]string(nil), c.Args...))
		}
	}
	return out
}
