package dst

import (
	"context"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// The primitives workload (Options.Primitives): besides the mutex keys, one
// lease semaphore of Options.SemaphoreLimit permits and one read/write
// lock, taken through the driver as lease.Semaphore and lease.RWLock take
// them (actor.AcquireSpec with Kind, WireKey and Limit), with the same user
// calls as a mutex and the same faults. Their keys never move slots; a
// failover keeps the whole keyspace, sorted sets included.

// primitive is one semaphore or read/write lock of the schedule.
type primitive struct {
	name string // what the user's current handle is filed under ("sem:1", "rw:1")
	sem  conn.Semaphore
	rw   conn.RWLock
	isRW bool
}

// keys returns every server key of the primitive.
func (r *primitive) keys() []string {
	if r.isRW {
		return []string{r.rw.WriterKey, r.rw.ReadersKey}
	}
	return []string{r.sem.HoldersKey}
}

// newPrimitives makes the schedule's semaphore and read/write lock, their
// keys on the first node.
func (w *world) newPrimitives(first *node) {
	sem, err := conn.NewSemaphore("", "s1", w.opt.SemaphoreLimit)
	if err != nil {
		panic(err) // a constant name and a limit withDefaults made ≥ 1
	}
	rw, err := conn.NewRWLock("", "rw1")
	if err != nil {
		panic(err)
	}
	w.prims = []*primitive{{name: "sem:1", sem: sem}, {name: "rw:1", rw: rw, isRW: true}}
	for _, r := range w.prims {
		for _, k := range r.keys() {
			w.owner[k] = first
		}
	}
}

// primitiveOf returns the primitive whose holders set (a semaphore's
// holders, a lock's readers) or writer key is key, nil for none.
func (w *world) primitiveOf(key string) *primitive {
	for _, r := range w.prims {
		if r.sem.HoldersKey == key || r.rw.ReadersKey == key || r.rw.WriterKey == key {
			return r
		}
	}
	return nil
}

// thinkPrimitive is one user decision of p about primitive r.
func (w *world) thinkPrimitive(p *process, r *primitive) {
	h := p.current[r.name]
	switch {
	case h != nil && h.outcome == "":
		// still acquiring: the user waits
	case h == nil || w.finished(h):
		w.acquirePrimitive(p, r)
	default:
		w.userAction(h)
	}
}

// acquirePrimitive starts a new handle's acquisition of a permit of r, or
// of a read or (one in three) the write hold of r: with or without a wait,
// a keep-alive, the lock's context.
func (w *world) acquirePrimitive(p *process, r *primitive) {
	kind, key := actor.KindPermit, r.sem.HoldersKey
	if r.isRW {
		kind, key = actor.KindRead, r.rw.ReadersKey
		if w.rng.IntN(3) == 0 {
			kind, key = actor.KindWrite, r.rw.WriterKey
		}
	}
	id := w.id()
	h := &handle{id: id, name: "h" + strconv.FormatInt(id, 10), proc: p, key: key, keyIndex: -1, prim: r, acquiredAt: -1}
	w.handles = append(w.handles, h)
	w.live = append(w.live, h)
	p.current[r.name] = h
	h.spec = actor.AcquireSpec{WireKey: key, Kind: kind, Limit: r.sem.Limit, TTL: w.leaseTTL(),
		RetryEvery: 5 * time.Millisecond, RetryEverySet: true}
	switch {
	case w.opt.Liveness:
		h.spec.Wait = w.livenessBudget()
	case w.rng.IntN(2) == 0:
		h.spec.Wait = w.between(0, 100*time.Millisecond)
	}
	h.spec.KeepAlive = !w.opt.Liveness && w.rng.IntN(3) == 0
	if w.opt.giveUp {
		h.spec.Wait = 0
	}
	watch := w.rng.IntN(2) == 0
	w.maybeFair(h)
	w.call(h, callAcquire, func(ctx context.Context) string {
		lock, err := p.driver.Acquire(ctx, h.spec)
		return w.acquired(h, lock, err, watch)
	})
}

// countAcquired counts a primitive's successful acquisition.
func (w *world) countAcquired(h *handle) {
	switch h.spec.Kind {
	case actor.KindPermit:
		w.stats.Permits++
	case actor.KindRead:
		w.stats.Reads++
	case actor.KindWrite:
		w.stats.Writes++
	}
}

func (w *world) shouldCrashProcess() bool { return w.chance(w.opt.CrashPercent) }

// crashProcess kills p for good (primitives schedules): none of its events
// runs again; what it held on the servers ends with its leases. At least
// one other process stays alive.
func (w *world) crashProcess(p *process) {
	alive := 0
	for _, q := range w.procs {
		if !q.crashed {
			alive++
		}
	}
	if p.crashed || alive < 2 {
		return
	}
	p.crashed, p.paused = true, true
	w.stats.Crashes++
	w.trace.logf(w, p, "", "fault: process crashes")
}

// failoverInPlace is the failover of a primitives schedule: the engine
// itself becomes a server of profile (sim.Engine.Failover: every client
// dropped, scripts and tracking forgotten) and keeps its whole keyspace,
// sorted sets and expiries included, as a fully replicated replica would.
func (n *node) failoverInPlace(w *world, profile sim.Profile) {
	if err := n.engine.Failover(profile); err != nil {
		panic(err) // profile is one of sim.Profiles
	}
	n.profile = profile
	n.generation++
	clear(n.byID)
	w.stats.Failovers++
	w.trace.logf(w, nil, "", "fault: %s fails over to %s in place (generation %d)", n.name, profile, n.generation)
	for _, c := range w.conns {
		if !c.closed && c.node == n && c.generation == n.generation-1 {
			n.engine.CloseClient(c.clientID)
			w.closeConn(c, io.EOF)
		}
	}
}

// memberKey returns the holders set an op works on when it is a member's
// (a permit's, a read hold's) script, "" otherwise.
func (op *opRun) memberKey() string {
	switch {
	case strings.HasPrefix(op.name, "semaphore-"), op.name == "fair-semaphore-acquire":
		return op.key
	case strings.HasPrefix(op.name, "read-"), op.name == "readers", op.name == "fair-read-acquire":
		return conn.RWLockOfKey(op.key).ReadersKey
	}
	return ""
}

// countPrimitiveSchedule counts, at the end, what the schedule did with
// its primitives.
func (w *world) countPrimitiveSchedule() {
	if len(w.prims) == 0 {
		return
	}
	w.stats.PrimitiveSchedules = 1
	if w.stats.Permits > 0 {
		w.stats.PermitSchedules = 1
	}
	if w.stats.Reads+w.stats.Writes > 0 {
		w.stats.RWSchedules = 1
	}
}
