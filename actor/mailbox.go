package actor

import (
	"errors"
	"sync"
)

// ErrStopped is returned by [Mailbox.Send], [Mailbox.Deliver] and [Ask] once
// the mailbox has been stopped. A message refused with ErrStopped was never
// handled.
var ErrStopped = errors.New("actor: mailbox stopped")

// ErrMailboxFull is returned by [Mailbox.Send] and [Ask] when the mailbox
// already holds its capacity of unhandled messages. The message was not
// accepted and will never be handled; the caller may retry later.
var ErrMailboxFull = errors.New("actor: mailbox full")

// DefaultCapacity is the bound used by [NewMailbox] when capacity <= 0.
const DefaultCapacity = 64

// shrinkAbove is the queue capacity above which an emptied queue releases its
// backing array, so an idle mailbox keeps at most a small one.
const shrinkAbove = 4

// Mailbox is a bounded FIFO of messages for one handler that runs on at most
// one goroutine at a time and on no goroutine while the mailbox is empty.
//
// All methods are safe for concurrent use. A Mailbox must be created with
// [NewMailbox]; the zero value is not usable, and a Mailbox must not be copied.
type Mailbox[M any] struct {
	handler  func(M)
	capacity int

	mu       sync.Mutex
	queue    []M // pending messages are queue[head:]
	head     int
	draining bool          // a drain goroutine owns the handler
	stopped  bool          // no message is accepted or handled any more
	done     chan struct{} // created lazily; closed once stopped and not draining
}

// closedDone is handed out by Done for mailboxes that stopped before anyone
// asked for their done channel, so those never allocate one.
var closedDone = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// NewMailbox returns an idle mailbox that passes each accepted message to
// handler. capacity bounds the messages accepted by Send and not yet handled;
// capacity <= 0 means [DefaultCapacity]. It starts no goroutine.
//
// handler must not block and must not panic (a panic crashes the process, as
// in any goroutine). It may call Send, Deliver and RequestStop on its own
// mailbox, but never Stop, which would wait for the handler itself.
func NewMailbox[M any](capacity int, handler func(M)) *Mailbox[M] {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Mailbox[M]{handler: handler, capacity: capacity}
}

// Send enqueues m for the handler. It never blocks. It returns
// [ErrStopped] after Stop or RequestStop, and [ErrMailboxFull] when capacity
// messages are already pending; in both cases m will not be handled. A nil
// error means m will be handled unless the mailbox is stopped first.
func (mb *Mailbox[M]) Send(m M) error {
	return mb.enqueue(m, true)
}

// Deliver is Send without the capacity bound. Use it only for messages whose
// number is bounded elsewhere and which must not be dropped: timer ticks (at
// most one per armed [Alarm]) and completions of work the handler itself
// started. It never blocks and fails only with [ErrStopped].
func (mb *Mailbox[M]) Deliver(m M) error {
	return mb.enqueue(m, false)
}

func (mb *Mailbox[M]) enqueue(m M, bounded bool) error {
	mb.mu.Lock()
	if mb.stopped {
		mb.mu.Unlock()
		return ErrStopped
	}
	if bounded && len(mb.queue)-mb.head >= mb.capacity {
		mb.mu.Unlock()
		return ErrMailboxFull
	}
	if mb.head > 0 && len(mb.queue) == cap(mb.queue) {
		mb.compact()
	}
	mb.queue = append(mb.queue, m)
	start := !mb.draining
	mb.draining = true
	mb.mu.Unlock()
	if start {
		go mb.drain()
	}
	return nil
}

// compact moves the pending messages to the front of the queue; mb.mu is held.
func (mb *Mailbox[M]) compact() {
	n := copy(mb.queue, mb.queue[mb.head:])
	clear(mb.queue[n:])
	mb.queue = mb.queue[:n]
	mb.head = 0
}

// drain runs the handler for each pending message and exits when the queue is
// empty or the mailbox stopped. The empty check and clearing draining happen
// under the same lock as enqueue's check, so a concurrent Send either sees
// draining == true (and its message is picked up by this loop) or starts a
// new drain goroutine after this one has given up ownership: no lost wakeup,
// never two drainers.
func (mb *Mailbox[M]) drain() {
	for {
		m, ok := mb.next()
		if !ok {
			return
		}
		mb.handler(m)
	}
}

// next pops the oldest message, or releases drain ownership and returns false.
func (mb *Mailbox[M]) next() (M, bool) {
	var zero M
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.stopped || mb.head == len(mb.queue) {
		mb.draining = false
		mb.resetQueue()
		if mb.stopped && mb.done != nil {
			close(mb.done)
		}
		return zero, false
	}
	m := mb.queue[mb.head]
	mb.queue[mb.head] = zero // drop references held by handled messages
	mb.head++
	return m, true
}

// resetQueue empties the queue, discarding any pending message, and keeps the
// backing array only if it is small; mb.mu is held.
func (mb *Mailbox[M]) resetQueue() {
	if cap(mb.queue) > shrinkAbove || mb.stopped {
		mb.queue = nil
	} else {
		clear(mb.queue)
		mb.queue = mb.queue[:0]
	}
	mb.head = 0
}

// RequestStop stops the mailbox without waiting: later Send and Deliver calls
// return [ErrStopped], and messages accepted but not yet handled are
// discarded (callers waiting in [Ask] get ErrStopped). A handler call already
// running completes. It never blocks, is idempotent, and is the way for the
// handler to stop its own mailbox.
func (mb *Mailbox[M]) RequestStop() {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.stopped {
		return
	}
	mb.stopped = true
	if !mb.draining {
		mb.resetQueue()
		if mb.done != nil {
			close(mb.done)
		}
	}
}

// Stop is RequestStop followed by waiting until no handler call is running;
// after Stop returns the handler will never run again. It is idempotent and
// safe for concurrent use. It blocks for as long as the running handler call
// takes, so it must not be called from the handler (that deadlocks; use
// RequestStop there).
func (mb *Mailbox[M]) Stop() {
	mb.RequestStop()
	<-mb.Done()
}

// Done returns a channel that is closed once the mailbox is stopped and no
// handler call is running. It never blocks; the channel is created on first
// use, so idle mailboxes that nobody waits on do not pay for it.
func (mb *Mailbox[M]) Done() <-chan struct{} {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.done == nil {
		if mb.stopped && !mb.draining {
			return closedDone
		}
		mb.done = make(chan struct{})
	}
	return mb.done
}

// Pending reports how many accepted messages are not yet handled. It is a
// snapshot, for metrics and tests.
func (mb *Mailbox[M]) Pending() int {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return len(mb.queue) - mb.head
}
