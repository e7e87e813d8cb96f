package conn

import (
	"context"
	"errors"
	"fmt"
)

// openCall is one open in flight (a session's, a fence connection's, a
// watcher's): callers of the same key wait for it instead of opening a
// second connection.
type openCall struct {
	done chan struct{} // closed once val and err are set
	val  any
	err  error
}

// opened runs open once per key at a time on a task of the engine, under
// a ctx that keeps ctx's values but not its end (Close ends it, and
// openBound), and waits for it until ctx ends: a caller that gives up
// leaves the open to the others.
func (e *Engine) opened(ctx context.Context, key, op, node string, open func(context.Context) (any, error)) (any, error) {
	e.mu.Lock()
	call := e.opening[key]
	if call == nil {
		call = &openCall{done: make(chan struct{})}
		e.opening[key] = call
		octx, cancel := e.detached(ctx, openBound)
		e.background(func() {
			call.val, call.err = open(octx)
			// Let go of octx (the caller's values) before the callers are
			// answered: until cancel ran, the engine's stop ctx holds it,
			// and a caller that returned must not find its ctx kept
			// reachable by an open still finishing.
			cancel()
			octx, cancel = nil, nil
			e.mu.Lock()
			delete(e.opening, key)
			e.mu.Unlock()
			close(call.done)
		})
	}
	e.mu.Unlock()
	if err := e.spawn.Wait(ctx, call.done); err != nil {
		return nil, &Error{Class: NotSubmitted, Op: op, Addr: node, Err: err}
	}
	return call.val, call.err
}

// SessionForKey implements Transport: the current session to the primary
// that owns key, opening one when needed. It blocks while routing (CLUSTER
// SLOTS on first use in cluster mode) or opening; failures are
// NotSubmitted *Error values.
func (e *Engine) SessionForKey(ctx context.Context, key string) (Session, error) {
	node, err := e.route(ctx, "open", key)
	if err != nil {
		return nil, err
	}
	return e.SessionFor(ctx, node)
}

// SessionFor implements Transport: the current session to node, opening
// one (with empty capabilities and a fresh identity) when there is none or
// the last one was retired. Concurrent callers share one open. It blocks
// while the session opens, until ctx ends. Open failures are NotSubmitted.
func (e *Engine) SessionFor(ctx context.Context, node string) (Session, error) {
	s, err := e.sessionFor(ctx, node)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// sessionFor is SessionFor with the engine's session type.
func (e *Engine) sessionFor(ctx context.Context, node string) (*session, error) {
	if s, err := e.current(node); s != nil || err != nil {
		return s, err
	}
	val, err := e.opened(ctx, "session "+node, "open", node, func(octx context.Context) (any, error) {
		return e.openCurrent(octx, node)
	})
	if err != nil {
		e.markSlotsStale() // the node may be gone: a failover moves its slots
		return nil, err
	}
	return val.(*session), nil
}

// current returns node's current session, nil if there is none to share,
// or an error when the engine is closed.
func (e *Engine) current(node string) (*session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, &Error{Class: NotSubmitted, Op: "open", Addr: node, Err: ErrPoolClosed}
	}
	if s := e.sessions[node]; s != nil && !s.Retired() {
		return s, nil
	}
	return nil, nil
}

// openCurrent opens a session to node and makes it node's current one.
func (e *Engine) openCurrent(ctx context.Context, node string) (*session, error) {
	if s, err := e.current(node); s != nil || err != nil {
		return s, err
	}
	s, err := e.openSession(ctx, node)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	cur := e.sessions[node]
	if cur == nil || cur.Retired() {
		e.sessions[node] = s
		e.mu.Unlock()
		return s, nil
	}
	e.mu.Unlock()
	e.retireSession(s, RetiredSuperseded) // OpenSession callers may have raced us
	return cur, nil
}

// OpenSession opens a new, separate session to node that the engine does
// not hand out to other callers (Close still closes it): a second physical
// connection, with capabilities of its own. It blocks while it opens;
// failures are NotSubmitted.
func (e *Engine) OpenSession(ctx context.Context, node string) (Session, error) {
	octx, cancel := e.own(ctx, openBound)
	defer cancel()
	s, err := e.openSession(octx, node)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Do implements Transport: op runs on the session of its key's primary,
// following MOVED (re-sent on the target) and ASK (ASKING + the command on
// the target): a redirect proves the command did not run where it was
// sent. A command that a socket found dead before the hand-off refused is
// sent once more on a fresh session. route, when not nil, is told each
// session right before its hand-off and may stop the operation; after an
// Uncertain error route.Session() is the socket to fence. It blocks until
// a definite answer or an error. An Uncertain command is never replayed.
func (e *Engine) Do(ctx context.Context, op Op, route *Route) (res Result, err error) {
	if o := e.obs; o != nil && o.Op != nil {
		var end func(error)
		ctx, end = o.Op(ctx, op)
		defer func() { end(err) }()
	}
	if op.kind == opFenced {
		if err := e.CheckFencedKeys(op.key, op.counter); err != nil {
			return Result{}, err
		}
	}
	if err := op.invalid(); err != nil {
		return Result{}, err
	}
	node, err := e.route(ctx, op.name(), op.key)
	if err != nil {
		return Result{}, err
	}
	asking := false
	for hop := 0; ; hop++ {
		s, err := e.sessionFor(ctx, node)
		if err != nil {
			return Result{}, err
		}
		res, err := s.run(ctx, op, asking, route)
		if err == nil {
			err = s.confirmRenewal(ctx, op, res) // Sentinel: a renewal needs its replicas' acknowledgement
			res = s.confirmAcquisition(ctx, op, res)
		}
		var re *Error
		if err == nil || !errors.As(err, &re) || hop >= maxRedirects {
			return res, err
		}
		if RetriableOnFreshSession(err) {
			continue // the socket died before the hand-off: a fresh session may send it
		}
		if re.Redirect == nil {
			return res, err
		}
		if !re.Redirect.Ask {
			e.learnSlot(re.Redirect.Slot, re.Redirect.Addr)
		}
		node, asking = re.Redirect.Addr, re.Redirect.Ask
	}
}

// route returns the address of the node key belongs to.
func (e *Engine) route(ctx context.Context, op, key string) (string, error) {
	if e.mode != ModeCluster {
		node, err := e.primary(ctx)
		if err != nil {
			return "", &Error{Class: NotSubmitted, Op: op, Err: err}
		}
		return node, nil
	}
	return e.routeSlot(ctx, op, keySlot(key))
}

// primary returns the node that takes writes outside cluster mode: the
// one node of a standalone client, the current primary of a Sentinel one.
func (e *Engine) primary(ctx context.Context) (string, error) {
	nodes, err := e.client.Nodes(ctx)
	if err != nil {
		return "", err
	}
	if len(nodes) != 1 {
		return "", fmt.Errorf("%w: %d nodes", ErrAmbiguousPrimary, len(nodes))
	}
	e.notePrimary(nodes[0])
	return nodes[0], nil
}

// CheckFencedKeys implements Transport: in cluster mode a lease key and a
// counter key of different hash slots are refused (NotSubmitted,
// ErrCrossSlot). It sends nothing.
func (e *Engine) CheckFencedKeys(leaseKey, counterKey string) error {
	if e.mode == ModeCluster && keySlot(leaseKey) != keySlot(counterKey) {
		return &Error{Class: NotSubmitted, Op: fencedOp, Err: ErrCrossSlot}
	}
	return nil
}
