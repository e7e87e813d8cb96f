// Package closedprobe tells whether a user's Redis client was closed, for
// the adapters whose client has no call that says so without a command:
// rueidis and valkey-go, which both leave dedicated clients working after
// the user's Close. The adapter gives it one probe that sends nothing, and
// the package decides when to ask and what the answers mean.
//
// The probe both adapters use: their client's Close replaces each node's
// connections with a dead one, which answers a Receive at once and first
// of all — before it looks at the ctx — with ErrClosing, or with the error
// the node's last failed dial or handshake left there; an open client's
// connection checks the ctx before sending the SUBSCRIBE. So a Receive
// whose ctx is already cancelled sends nothing either way. The client
// takes a SUBSCRIBE's connection to a node always from the node's first
// pipeline connection (the one it dialled when it learned the node). A
// close that races the client's redial of that connection leaves it open,
// and the client then reads as open. When that connection is not up
// (never used, or broken and not redialled yet), the probe makes the
// client dial it with the cancelled ctx, which fails at once without
// sending anything; a command of the user's that asks for that connection
// in the same instant shares the failed dial (the client retries it when
// the command is retryable), and the user's next command dials afresh.
//
// In a cluster the probe goes through one node client (First), looked up
// afresh for each probe: the cluster client would route a sharded
// SUBSCRIBE by its channel's slot, and a slot it has no node for makes it
// read the cluster's topology on every probe. A cluster client's Close
// closes its node clients; a node client it dropped in a topology change,
// closed seconds later, is no longer among its nodes by then.
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

// First returns the node of the smallest address in nodes (false when
// there is none): the node a cluster's probes go through.
func First[C any](nodes map[string]C) (C, bool) {
	first, found := "", false
	for addr := range nodes {
		if !found || addr < first {
			first, found = addr, true
		}
	}
	return nodes[first], found
}
