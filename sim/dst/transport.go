package dst

import (
	"context"
	"errors"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// simTransport is one process's conn.Transport over the simulated network,
// as conn.Pool is over rueidis: one current session per node (opened with
// the identity handshake, retired after a redirect, a transport failure or
// a fence), redirects followed with the process's own slot map, fences sent
// on a control connection, and a tracking watcher per node for push. Its
// blocking methods run in tasks and wait through the process's Spawn; its
// errors are *conn.Error values classified as conn classifies them.
type simTransport struct {
	w        *world
	p        *process
	cluster  bool
	route    map[string]*node // the process's slot map: key -> node (corrected by MOVED)
	sessions []*simSession    // current session per node index
	opening  []*openCall      // a session open in flight per node index
	control  []*connection    // per node index: where fences are sent
	watchers []*watcher       // current watcher per node index
	refusals map[int]watchRefusal
	handler  func(node string, keys []string)
}

// errUnknownNode: a redirect or a caller named an address no node has.
var errUnknownNode = errors.New("node is not known to the client")

// errNotModelled: an operation the simulation does not run.
var errNotModelled = errors.New("not modelled by the simulation")

func newTransport(w *world, p *process) *simTransport {
	// Cluster routing (slot map, MOVED) whenever the schedule may move a
	// slot; otherwise the standalone path of the driver (a cached session).
	return &simTransport{w: w, p: p, cluster: w.opt.MoveSlotPercent > 0, route: map[string]*node{}}
}

// grow makes the per-node slices long enough for n.
func (t *simTransport) grow(n *node) {
	for len(t.sessions) <= n.index {
		t.sessions = append(t.sessions, nil)
		t.opening = append(t.opening, nil)
		t.control = append(t.control, nil)
		t.watchers = append(t.watchers, nil)
	}
}

// Cluster implements conn.Transport.
func (t *simTransport) Cluster() bool { return t.cluster }

// routeFor is the node the process believes owns key.
func (t *simTransport) routeFor(key string) *node {
	if n := t.route[key]; n != nil {
		return n
	}
	return t.w.nodes[0]
}

// SessionForKey implements conn.Transport.
func (t *simTransport) SessionForKey(ctx context.Context, key string) (conn.Session, error) {
	s, err := t.sessionFor(ctx, t.routeFor(key))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// SessionFor implements conn.Transport.
func (t *simTransport) SessionFor(ctx context.Context, addr string) (conn.Session, error) {
	n := t.w.nodeByAddr(addr)
	if n == nil {
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: addr, Err: errUnknownNode}
	}
	s, err := t.sessionFor(ctx, n)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// IsPrimary implements conn.Transport: every node is a primary (no
// Sentinel in the simulation; a failover keeps the node's address).
func (t *simTransport) IsPrimary(string) bool { return true }

// ClientAlive implements conn.Transport: the simulated client is never
// closed.
func (t *simTransport) ClientAlive() error { return nil }

// SetInvalidationHandler implements conn.Transport.
func (t *simTransport) SetInvalidationHandler(fn func(node string, keys []string)) { t.handler = fn }

// CheckFencedKeys implements conn.Transport.
func (t *simTransport) CheckFencedKeys(leaseKey, counterKey string) error {
	if t.cluster && sim.Slot(leaseKey) != sim.Slot(counterKey) {
		return &conn.Error{Class: conn.NotSubmitted, Op: "fenced-acquire", Err: conn.ErrCrossSlot}
	}
	return nil
}

// AcquireReplicated implements conn.Transport: WAIT is not modelled (the
// workload never asks for replicas).
func (t *simTransport) AcquireReplicated(context.Context, context.Context, string, string, string, int64, int64,
	int64) (conn.ReplicatedFencedResult, error) {
	return conn.ReplicatedFencedResult{}, &conn.Error{Class: conn.NotSubmitted, Op: "fenced-acquire", Err: errNotModelled}
}

// RetireAll implements conn.Transport.
func (t *simTransport) RetireAll() {
	for _, s := range t.sessions {
		if s != nil {
			t.retire(s)
		}
	}
}

// Close implements conn.Transport.
func (t *simTransport) Close() {
	t.RetireAll()
	for _, wt := range t.watchers {
		if wt != nil {
			t.w.retireConn(wt.conn)
		}
	}
}

// Do implements conn.Transport as conn.Pool.Do does: op runs on the
// session of its key's primary; MOVED is re-sent on the node it names
// (the slot map learns it), ASK with ASKING first; a command refused by a
// session found dead before the hand-off is sent once more per hop on a
// fresh session. It blocks until a definite answer or an error; an
// Uncertain command is never replayed.
func (t *simTransport) Do(ctx context.Context, op conn.Op, route *conn.Route) (conn.Result, error) {
	if lease, counter, ok := op.FencedKeys(); ok {
		if err := t.CheckFencedKeys(lease, counter); err != nil {
			return conn.Result{}, err
		}
	}
	if err := op.Invalid(); err != nil {
		return conn.Result{}, err
	}
	rec := t.w.newOp(t.p, op, "")
	res, err := t.do(ctx, op, route, rec)
	t.w.opEnded(rec, err)
	return res, err
}

// maxRedirects bounds the MOVED/ASK hops of one operation, as conn's.
const maxRedirects = 5

func (t *simTransport) do(ctx context.Context, op conn.Op, route *conn.Route, rec *opRun) (conn.Result, error) {
	n, asking := t.routeFor(op.Key()), false
	for hop := 0; ; hop++ {
		s, err := t.sessionFor(ctx, n)
		if err != nil {
			return conn.Result{}, err
		}
		res, err := s.run(ctx, op, asking, route, rec)
		var e *conn.Error
		if err == nil || !errors.As(err, &e) || hop >= maxRedirects {
			return res, err
		}
		if conn.RetriableOnFreshSession(err) {
			continue
		}
		if e.Redirect == nil {
			return res, err
		}
		target := t.w.nodeByAddr(e.Redirect.Addr)
		if target == nil {
			return res, &conn.Error{Class: conn.NotSubmitted, Op: op.Name(), Addr: e.Redirect.Addr, Err: errUnknownNode}
		}
		t.w.stats.Redirects++
		n, asking = target, e.Redirect.Ask
	}
}

// learnSlot corrects the slot map after a MOVED answer: key lives on to.
// Keys tracked on the node that answered may live elsewhere now, so its
// watcher's handler is told that everything there counts as changed, as
// conn's slotMoved does.
func (t *simTransport) learnSlot(key string, from, to *node) {
	if t.route[key] == to {
		return
	}
	t.route[key] = to
	if from != to && t.handler != nil {
		t.handler(from.addr, nil)
	}
}
