package faultproxy

import (
	"bytes"
	"net"
	"sync"
	"time"
)

// readSize is the size of the reads from a source socket.
const readSize = 32 << 10

// chunk is a piece of the byte stream read from a source socket, or its end.
type chunk struct {
	data   []byte
	readAt time.Time
	eof    bool // end of stream: half-close the destination
}

// pipe forwards one direction of a Conn: its reader queues what it reads
// from src, without bound, and its writer writes the queue to dst, holding
// it while stalled, waiting for the delay, and dropping it when black-holed.
type pipe struct {
	src, dst *net.TCPConn
	stop     <-chan struct{} // closed when the Conn shuts down

	mu        sync.Mutex
	queue     []chunk
	queued    int // bytes in queue
	stalled   bool
	allowance int // bytes a stalled pipe still lets through (Conn.Release)
	blackHole bool
	delay     time.Duration
	changed   chan struct{} // closed and replaced at every change of the fields above
}

// newPipe returns the pipe forwarding from src to dst until stop is closed.
func newPipe(src, dst *net.TCPConn, stop <-chan struct{}) *pipe {
	return &pipe{src: src, dst: dst, stop: stop, changed: make(chan struct{})}
}

// notifyLocked wakes whoever waits for a change of p. p.mu must be held.
func (p *pipe) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// setStalled stalls or unstalls p.
func (p *pipe) setStalled(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = on
	if !on {
		p.allowance = 0
	}
	p.notifyLocked()
}

// release lets the next n queued or arriving bytes of a stalled p through.
func (p *pipe) release(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled && n > 0 {
		p.allowance += n
		p.notifyLocked()
	}
}

// setDelay sets the delay of p; d <= 0 turns it off.
func (p *pipe) setDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = max(d, 0)
	p.notifyLocked()
}

// setBlackHole drops the queue of p and everything p reads from now on.
func (p *pipe) setBlackHole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackHole = true
	p.discardLocked()
}

// discard drops the queue of p.
func (p *pipe) discard() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.discardLocked()
}

// discardLocked drops the queue of p. p.mu must be held.
func (p *pipe) discardLocked() {
	clear(p.queue)
	p.queue = nil
	p.queued = 0
	p.notifyLocked()
}

// isBlackHole reports whether p is black-holed.
func (p *pipe) isBlackHole() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blackHole
}

// buffered returns the bytes in p's queue.
func (p *pipe) buffered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queued
}

// bufferedAndChanged returns the bytes in p's queue and a channel closed at
// p's next change.
func (p *pipe) bufferedAndChanged() (int, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queued, p.changed
}

// push queues c, or drops it if p is black-holed or its Conn shut down.
func (p *pipe) push(c chunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blackHole || isClosed(p.stop) {
		return
	}
	p.queue = append(p.queue, c)
	p.queued += len(c.data)
	p.notifyLocked()
}

// readLoop queues what it reads from src until a read fails, and returns
// that error (io.EOF at the end of stream).
func (p *pipe) readLoop() error {
	buf := make([]byte, readSize)
	for {
		n, err := p.src.Read(buf)
		if n > 0 {
			p.push(chunk{data: bytes.Clone(buf[:n]), readAt: time.Now()})
		}
		if err != nil {
			return err
		}
	}
}

// writeLoop writes the queue to dst until the Conn shuts down (nil), the
// end of stream has been forwarded as a half-close of dst (the result of
// CloseWrite), or a write fails (its error).
func (p *pipe) writeLoop() error {
	for {
		c, ok := p.next()
		if !ok {
			return nil
		}
		if c.eof {
			return p.dst.CloseWrite()
		}
		if _, err := p.dst.Write(c.data); err != nil {
			return err
		}
	}
}

// next blocks until the head of the queue may be written and pops it, or
// until the Conn shuts down (false).
func (p *pipe) next() (chunk, bool) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c, wait, ready, changed := p.popReady(time.Now())
		if ready {
			return c, true
		}
		var fire <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			fire = timer.C
		}
		select {
		case <-p.stop:
			return chunk{}, false
		case <-changed:
		case <-fire:
		}
	}
}

// popReady pops and returns the head of the queue if it may be written at
// now (ready). Otherwise it returns how long the head still has to wait for
// its delay (0 if it waits for a change instead) and a channel closed at
// p's next change.
func (p *pipe) popReady(now time.Time) (c chunk, wait time.Duration, ready bool, changed <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	changed = p.changed
	if len(p.queue) == 0 || (p.stalled && (p.allowance == 0 || p.queue[0].eof)) {
		return chunk{}, 0, false, changed
	}
	head := p.queue[0]
	if due := head.readAt.Add(p.delay); now.Before(due) {
		return chunk{}, due.Sub(now), false, changed
	}
	if p.stalled {
		if len(head.data) > p.allowance { // split: the rest stays held
			p.queue[0].data = head.data[p.allowance:]
			head.data = head.data[:p.allowance]
		} else {
			p.queue[0] = chunk{}
			p.queue = p.queue[1:]
		}
		p.allowance -= len(head.data)
		p.queued -= len(head.data)
		p.notifyLocked()
		return head, 0, true, nil
	}
	p.queue[0] = chunk{}
	p.queue = p.queue[1:]
	p.queued -= len(head.data)
	p.notifyLocked()
	return head, 0, true, nil
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
