package conn

import (
	"sync"
	"time"
)

// PrimaryPoll is how often an engine in Sentinel mode asks its client which
// node is the primary (Client.Nodes, which sends nothing on the adapters
// of rueidis and valkey-go and on go-redis while its master is not known
// to have failed), once it knows one: a switch is noticed within this
// period of the client learning of it, even while no command runs.
const PrimaryPoll = 100 * time.Millisecond

// primaryBound bounds one poll of the primary (go-redis asks a Sentinel
// when it found its master failed).
const primaryBound = 2 * time.Second

// primaryState is the engine's view of a Sentinel client's primary.
type primaryState struct {
	mu      sync.Mutex
	known   string                // the primary the client named last
	handler func(old, now string) // told of each switch (SetPrimarySwitchHandler)
	timer   Timer                 // the next poll; nil before the first primary is known
	stopped bool                  // Close stopped the polls
}

// SetPrimarySwitchHandler implements Transport: fn is told, on a task of
// the engine, each time the Sentinel client names another primary than
// before (old, the primary before; now, the new one). By then every
// session to another node than now is demoted and retired: nothing it
// carried or answered afterwards confirms anything. Outside Sentinel mode
// fn is never called.
func (e *Engine) SetPrimarySwitchHandler(fn func(old, now string)) {
	e.prim.mu.Lock()
	e.prim.handler = fn
	e.prim.mu.Unlock()
}

// notePrimary records that the client names node as the primary now (rule
// PrimarySwitchRenewsAtOnce). The first primary known starts the polls; a
// different one is a switch: every session to another node is demoted and
// retired, then the switch handler is told.
func (e *Engine) notePrimary(node string) {
	if e.mode != ModeSentinel {
		return
	}
	p := &e.prim
	p.mu.Lock()
	old, fn := p.known, p.handler
	if old == node || p.stopped {
		p.mu.Unlock()
		return
	}
	p.known = node
	if p.timer == nil {
		p.timer = e.clock.AfterFunc(PrimaryPoll, e.pollPrimary)
	}
	p.mu.Unlock()
	if old == "" {
		return
	}
	e.forgetReplicas(node)
	e.demoteAllBut(node)
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if fn != nil && !closed {
		e.background(func() { fn(old, node) })
	}
}

// demoteAllBut demotes and retires every open session to another node than
// primary: a reply on one of them proves nothing any more.
func (e *Engine) demoteAllBut(primary string) {
	e.mu.Lock()
	open := sortedSessions(e.open)
	e.mu.Unlock()
	for _, s := range open {
		if s.node != primary {
			s.demoted.Store(true)
			e.retireSession(s, RetiredDemoted)
		}
	}
	e.dropStaleWatchers(primary)
}

// pollPrimary asks the client for the primary (see PrimaryPoll) and arms
// the next poll, until Close.
func (e *Engine) pollPrimary() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.running.Add() // under e.mu: Close, which sets closed under it, waits for this poll
	e.mu.Unlock()
	defer e.running.Done()
	ctx, cancel := Bound(e.clock, e.stop, primaryBound)
	_, _ = e.primary(ctx) // notes a switch
	cancel()
	p := &e.prim
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.timer.Reset(PrimaryPoll)
	}
}

// stopPrimaryPolls stops the polls for good (Close).
func (e *Engine) stopPrimaryPolls() {
	p := &e.prim
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
	}
}
