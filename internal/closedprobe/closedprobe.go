// Package closedprobe tells whether a user's Redis client was closed, for
// the adapters whose client has no call that says so without a command
// (rueidis and valkey-go: both leave dedicated clients working after the
// user's Close). The adapter gives it one probe that sends nothing — a
// Receive whose ctx is already cancelled: an open client refuses it before
// sending, a closed one answers at once from its dead connection — and the
// package decides when to ask and what the answers mean.
package closedprobe

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// Prober remembers whether a client was found closed. It is safe for
// concurrent use; the zero value is not usable (see New).
type Prober struct {
	probe   func() error     // one probe of the adapter's (sends nothing)
	closing error            // the client's ErrClosing
	reply   func(error) bool // whether an error is the client's error reply

	closedBy  atomic.Pointer[error]         // what the closed client answered
	inflight  atomic.Pointer[chan struct{}] // closed when the probe in flight ends
	lastProbe atomic.Int64                  // nanoseconds since epoch of the last probe
}

// New returns a Prober that asks with probe. closing is the client's
// ErrClosing; reply reports whether an error is one of the client's error
// replies, by its dynamic type, which must be a pointer (an error a
// handshake may leave on a dead connection).
func New(probe func() error, closing error, reply func(error) bool) *Prober {
	return &Prober{probe: probe, closing: closing, reply: reply}
}

// Closed returns what the closed client answered once it was found closed
// (for good), nil before. Two probes in a row that fail with a closed
// client's answer — ErrClosing both times, or the very same dial error or
// error reply value, which an open client never repeats (each of its
// dials fails afresh) — mean closed.
//
// A probe runs when the last one is older than Gap, on a goroutine of its
// own (a probe that finds the client's connection being redialled waits
// for that dial), and every Closed made while it runs waits for it at most
// Wait: a closed client answers at once, a later answer is read by a later
// call. So a call made within Gap of the client's close may still find it
// open, and so may one made before the probe had the CPU to run (in a
// starved process); every later one finds it closed.
func (p *Prober) Closed() error {
	if c := p.closedBy.Load(); c != nil {
		return *c
	}
	done := p.inflight.Load()
	if done == nil {
		now, last := time.Since(epoch).Nanoseconds(), p.lastProbe.Load()
		if last != 0 && now-last < int64(Gap) || !p.lastProbe.CompareAndSwap(last, now) {
			return nil
		}
		ch := make(chan struct{})
		if !p.inflight.CompareAndSwap(nil, &ch) {
			return nil
		}
		go func() {
			defer close(ch)
			defer p.inflight.Store(nil)
			p.ask()
		}()
		done = &ch
	}
	t := time.NewTimer(Wait)
	defer t.Stop()
	select {
	case <-*done:
		if c := p.closedBy.Load(); c != nil {
			return *c
		}
	case <-t.C:
	}
	return nil
}

// ask sends the two probes of Closed and records a close.
func (p *Prober) ask() {
	first := p.probe()
	if !p.closedAnswer(first) {
		return
	}
	second := p.probe()
	if errors.Is(first, p.closing) && errors.Is(second, p.closing) || p.samePointer(first, second) {
		p.closedBy.CompareAndSwap(nil, &first)
	}
}

// closedAnswer reports whether err is what a closed client may answer:
// ErrClosing, a dial error or a handshake's error reply.
func (p *Prober) closedAnswer(err error) bool {
	_, dial := err.(*net.OpError)
	return dial || p.reply(err) || errors.Is(err, p.closing)
}

// samePointer reports whether a, a dial error or an error reply, is the
// very value b is (both are pointers: comparing them is safe).
func (p *Prober) samePointer(a, b error) bool {
	if _, ok := a.(*net.OpError); ok || p.reply(a) {
		return a == b
	}
	return false
}

// Gap bounds how often Closed asks; Wait how long a call waits for the
// answer.
const (
	Gap  = 10 * time.Millisecond
	Wait = time.Millisecond
)

var epoch = time.Now()
