package conn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// slotCount is the number of cluster hash slots.
const slotCount = 16384

// slotMap is the cluster slot → master address map, learned with CLUSTER
// SLOTS on first need, updated from MOVED replies, and read again when a
// node failed or the cluster said it cannot serve a slot (stale): no MOVED
// ever comes from a primary that died.
type slotMap struct {
	mu     sync.RWMutex
	loaded bool
	owner  [slotCount]string

	stale    atomic.Bool  // read CLUSTER SLOTS again before the next route
	loadedAt atomic.Int64 // monotonic time of the last successful read (monoNow)
}

// slotReloadGap bounds how often a stale slot map is read again.
const slotReloadGap = 100 * time.Millisecond

// markSlotsStale makes the next route read CLUSTER SLOTS again (cluster
// mode; at most every slotReloadGap).
func (p *Pool) markSlotsStale() {
	if p.slots != nil {
		p.slots.stale.Store(true)
	}
}

// SessionFor returns the current session to node, opening one (with empty
// capabilities and a fresh identity) when there is none or the last one was
// retired. Concurrent callers share one open (one socket, one CLIENT ID). It
// blocks while the session opens, until ctx ends; a caller that gives up
// leaves the shared open to the others. Open failures are NotSubmitted.
func (p *Pool) SessionFor(ctx context.Context, node string) (Session, error) {
	s, err := p.sessionFor(ctx, node)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// sessionFor is SessionFor with this package's session type.
func (p *Pool) sessionFor(ctx context.Context, node string) (*pinned, error) {
	for {
		if s, err := p.current(node); s != nil || err != nil {
			return s, err
		}
		opened := p.opening.DoChan(node, func() (any, error) { return p.openCurrent(ctx, node) })
		select {
		case r := <-opened:
			if r.Err == nil {
				return r.Val.(*pinned), nil
			}
			p.markSlotsStale() // the node may be gone: a failover moves its slots
			if ctx.Err() == nil && (errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, context.DeadlineExceeded)) {
				continue // the caller that led the open gave up; ours is still live: open again
			}
			return nil, r.Err
		case <-ctx.Done():
			return nil, &Error{Class: NotSubmitted, Op: "open", Addr: node, Err: context.Cause(ctx)}
		}
	}
}

// current returns node's current session, nil if there is none to share, or
// an error when the pool is closed.
func (p *Pool) current(node string) (*pinned, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, &Error{Class: NotSubmitted, Op: "open", Addr: node, Err: ErrPoolClosed}
	}
	if s := p.sessions[node]; s != nil && !s.Retired() {
		return s, nil
	}
	return nil, nil
}

// openCurrent opens a session to node and makes it node's current one. Only
// one runs per node at a time (SessionFor's singleflight).
func (p *Pool) openCurrent(ctx context.Context, node string) (*pinned, error) {
	if s, err := p.current(node); s != nil || err != nil {
		return s, err
	}
	s, err := p.openSession(ctx, node)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	current := p.sessions[node]
	if current == nil || current.Retired() {
		p.sessions[node] = s
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	p.retireFor(s, RetiredSuperseded) // OpenSession callers outside SessionFor may have raced us
	return current, nil
}

// OpenSession opens a new, separate session to node that the Pool does not
// hand out to other callers (Pool.Close still closes it). Use it for a second
// physical connection; it discovers capabilities on its own. It blocks while
// the socket opens; failures are NotSubmitted.
func (p *Pool) OpenSession(ctx context.Context, node string) (Session, error) {
	s, err := p.openSession(ctx, node)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openSession is OpenSession with this package's session type.
func (p *Pool) openSession(ctx context.Context, node string) (*pinned, error) {
	nodeClient, ok := p.client.Nodes()[node]
	if !ok {
		return nil, &Error{Class: NotSubmitted, Op: "open", Addr: node,
			Err: fmt.Errorf("%w: %s", errUnknownNode, node)}
	}
	return openSession(ctx, p, node, nodeClient)
}

// errUnknownNode: the rueidis client has no connection to the node (yet).
var errUnknownNode = errors.New("node is not known to the client")

// learnNode makes the rueidis cluster client learn the node that now owns
// key's slot, after a redirect named a node it does not know (one added to
// the cluster after the client read the topology): our sessions' redirects
// never reach rueidis, so it is sent one harmless read of key (GET, which
// every least-privilege user of a lock may run). rueidis follows the MOVED
// itself and connects to the new owner. The reply is dropped.
func (p *Pool) learnNode(ctx context.Context, key string) {
	p.reportCommand(ctx, "GET")
	p.client.Do(ctx, p.client.B().Get().Key(key).Build())
}

// Close retires the session and closes its socket. Idempotent.
func (s *pinned) Close() { s.pool.retireFor(s, RetiredClosed) }

// retire retires s because its socket was found closed (RetiredDead).
func (p *Pool) retire(s *pinned) { p.retireFor(s, RetiredDead) }

// retireFor closes s and forgets it as its node's current session; reason
// is reported to the observer if s was not retired before.
func (p *Pool) retireFor(s *pinned, reason RetireReason) {
	p.mu.Lock()
	if p.sessions[s.node] == s {
		delete(p.sessions, s.node)
	}
	delete(p.open, s)
	p.mu.Unlock()
	s.close(reason)
}

// route returns the node address key belongs to.
func (p *Pool) route(ctx context.Context, op, key string) (string, error) {
	if !p.cluster {
		node, err := p.primary()
		if err != nil {
			return "", &Error{Class: NotSubmitted, Op: op, Err: err}
		}
		return node, nil
	}
	probe := p.client.B().Get().Key(key).Build()
	slot := int(probe.Slot())
	if p.slots.stale.Load() && monoNow()-p.slots.loadedAt.Load() >= int64(slotReloadGap) {
		_ = p.loadSlots(ctx, op) // on failure the old map stays, stale, for the next route
	}
	if node := p.slots.lookup(slot); node != "" {
		return node, nil
	}
	if err := p.loadSlots(ctx, op); err != nil {
		return "", err
	}
	if node := p.slots.lookup(slot); node != "" {
		return node, nil
	}
	return "", &Error{Class: NotSubmitted, Op: op, Err: rueidis.ErrNoSlot}
}

func (m *slotMap) lookup(slot int) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.owner[slot]
}

func (p *Pool) learnSlot(slot int, addr string) {
	if p.slots == nil || slot < 0 || slot >= slotCount {
		return
	}
	p.slots.mu.Lock()
	old := p.slots.owner[slot]
	p.slots.owner[slot] = addr
	p.slots.mu.Unlock()
	if old != "" && old != addr {
		p.slotMoved(old) // keys tracked on old may live elsewhere now: read them again
	}
}

// loadSlots asks any node for CLUSTER SLOTS through the ordinary client and
// replaces the map (slots no range covers are forgotten).
func (p *Pool) loadSlots(ctx context.Context, op string) error {
	p.reportCommand(ctx, "CLUSTER SLOTS")
	result := p.client.Do(ctx, buildCommand(p.client.B(), ClusterSlotsCommand()))
	ranges, err := result.ToArray()
	if err != nil {
		class := Definite
		if result.NonRedisError() != nil {
			class = NotSubmitted // CLUSTER SLOTS is a read; the lock command was not sent
		}
		return &Error{Class: class, Op: op, Err: err}
	}
	var owner [slotCount]string
	for _, r := range ranges {
		start, end, addr, ok := parseSlotRange(r)
		for slot := start; ok && slot <= end && slot < slotCount; slot++ {
			owner[slot] = addr
		}
	}
	p.slots.mu.Lock()
	p.slots.owner, p.slots.loaded = owner, true
	p.slots.mu.Unlock()
	p.slots.loadedAt.Store(monoNow())
	p.slots.stale.Store(false)
	return nil
}

// parseSlotRange reads one CLUSTER SLOTS entry: [start, end, [host, port, …], …].
func parseSlotRange(r rueidis.RedisMessage) (start, end int64, addr string, ok bool) {
	fields, err := r.ToArray()
	if err != nil || len(fields) < 3 {
		return 0, 0, "", false
	}
	start, _ = fields[0].AsInt64()
	end, _ = fields[1].AsInt64()
	master, err := fields[2].ToArray()
	if err != nil || len(master) < 2 {
		return 0, 0, "", false
	}
	host, _ := master[0].ToString()
	port, _ := master[1].AsInt64()
	return start, end, net.JoinHostPort(host, strconv.FormatInt(port, 10)), true
}
