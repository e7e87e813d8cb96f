package dst

import (
	"strconv"
	"time"

	"github.com/respire-go/respire/sim"
)

// The workload: each process's user does random things to its locks, and a
// chaos loop injects node-level faults. Both stop starting new things at
// Options.Horizon; pending work then drains.

// think is one user decision of p, then the next is scheduled.
func (w *world) think(p *process) {
	if w.now >= w.opt.Horizon {
		w.drain(p)
		return
	}
	defer w.schedule(p, w.now+w.between(time.Millisecond, 20*time.Millisecond), func() { w.think(p) })
	if len(p.calls) > 0 && w.shouldCancel() {
		c := p.calls[w.rng.IntN(len(p.calls))]
		w.stats.Cancellations++
		w.trace.logf(w, p, c.h.name, "user: cancels call %d (%s)", c.id, callNames[c.kind])
		c.cancel(errUserGaveUp)
		return
	}
	keyIndex := w.rng.IntN(len(w.keys) + len(w.prims))
	if keyIndex >= len(w.keys) {
		w.thinkPrimitive(p, w.prims[keyIndex-len(w.keys)])
		return
	}
	h := p.current[w.keys[keyIndex]]
	if w.crowdThink(p, keyIndex, h) {
		return
	}
	switch {
	case h != nil && h.outcome == "":
		// still acquiring: the user waits
	case h == nil || w.finished(h):
		w.acquire(p, keyIndex)
	default:
		w.userAction(h) // concurrent calls on one lock included
	}
}

// drain runs after the horizon: the user releases what it holds and stops
// once nothing is held or pending.
func (w *world) drain(p *process) {
	busy := len(p.calls) > 0
	for _, key := range w.resources() {
		h := p.current[key]
		if h == nil || w.finished(h) {
			continue
		}
		busy = true
		if !w.hasCall(h) && h.lock != nil {
			w.close(h)
		}
	}
	busy = w.crowdDrain(p) || busy
	if busy {
		w.schedule(p, w.now+w.between(time.Millisecond, 20*time.Millisecond), func() { w.think(p) })
	}
}

// resources names what a user may hold: the mutex keys, then the
// primitives.
func (w *world) resources() []string {
	if len(w.prims) == 0 {
		return w.keys
	}
	names := append([]string(nil), w.keys...)
	for _, r := range w.prims {
		names = append(names, r.name)
	}
	return names
}

// finished reports whether the user is done with h: it does not hold the
// lock and no call on it is pending.
func (w *world) finished(h *handle) bool {
	if h.outcome == "" {
		return false
	}
	if h.lock == nil {
		return true
	}
	_, held := h.lock.LeaseDeadline()
	return !held && !w.hasCall(h)
}

// livenessBudget is long enough for every other process to hold and
// release once: processes × (hold + lease slack).
func (w *world) livenessBudget() time.Duration {
	return time.Duration(len(w.procs)+1) * (w.opt.LeaseMin + 40*time.Millisecond) * 2
}

// chaos is the node-level fault loop.
func (w *world) chaos() {
	if w.now >= w.opt.Horizon {
		return
	}
	defer w.schedule(nil, w.now+w.between(time.Millisecond, 10*time.Millisecond), w.chaos)
	n := w.nodes[w.rng.IntN(len(w.nodes))]
	switch {
	case !n.paused && w.shouldPauseNode():
		w.pauseNode(n, w.between(time.Millisecond, w.opt.LeaseMax/2))
	case w.shouldFailover():
		n.failover(w, w.otherProfile(n.profile))
	case !w.moved && w.shouldMoveSlot():
		w.moved = true
		key, to := w.keys[w.rng.IntN(len(w.keys))], newNode(w, w.otherProfile(""), w.nodeKeys())
		if w.rng.IntN(2) == 0 {
			w.moveSlot(key, to)
		} else {
			w.startMigration(key, to, w.between(5*time.Millisecond, w.opt.LeaseMax))
		}
	case w.shouldDenyACL():
		perms := []string{"client", "delex", "delifeq", "evalsha"}
		n.denyACL(w, perms[w.rng.IntN(len(perms))])
	case w.shouldPauseProcess():
		p := w.procs[w.rng.IntN(len(w.procs))]
		if !p.paused {
			w.pauseProcess(p, w.between(w.opt.LeaseMax, 2*w.opt.LeaseMax))
		}
	case w.shouldCloseSession():
		w.retireSessions(w.procs[w.rng.IntN(len(w.procs))])
	case w.shouldKillClients():
		w.killClients(n)
	case w.shouldOverwrite():
		w.overwrite(w.keys[w.rng.IntN(len(w.keys))])
	case w.shouldCrashProcess():
		w.crashProcess(w.procs[w.rng.IntN(len(w.procs))])
	case w.shouldCloseClient():
		w.closeClient(w.procs[w.rng.IntN(len(w.procs))])
	}
}

func (w *world) shouldOverwrite() bool   { return w.chance(w.opt.OverwritePercent) }
func (w *world) shouldCloseClient() bool { return w.chance(w.opt.CloseClientPercent) }

// closeClient is p's user closing its Redis client under its locks (the
// engine never closes it): from now on the client reports itself closed
// (conn.Client.Closed) and dials nothing, so the engine refuses every
// command as not submitted; what was in flight goes on. The user keeps
// calling the driver.
func (w *world) closeClient(p *process) {
	if p.client.closed != nil || p.crashed {
		return
	}
	p.client.closed = errClientClosed
	w.stats.ClientCloses++
	w.trace.logf(w, p, "", "fault: the user closes the process's Redis client")
}

// overwrite is an outsider's SET of a held key with a token of its own (a
// lease of LeaseMax): no lock can prevent that, but a keep-alive holder
// must learn of it (invariant 9).
func (w *world) overwrite(key string) {
	n := w.owner[key]
	if s := n.state(w, key); !s.found || w.migrating[key] != nil {
		return
	}
	w.outsiders++
	token := "outsider." + strconv.Itoa(w.outsiders) + "-" + strconv.FormatUint(w.rng.Uint64(), 36)
	w.trace.nameToken(token, "outsider."+strconv.Itoa(w.outsiders))
	w.check.outsiders[token] = w.now
	w.stats.Overwrites++
	n.engine.AdminExec("SET", key, token, "PX", strconv.FormatInt(w.opt.LeaseMax.Milliseconds(), 10))
	n.refresh(w, key)
	w.takePushes(n)
	w.trace.logf(w, nil, "", "fault: an outsider overwrites %s on %s", key, n.name)
}

// retireSessions makes p's engine retire every session it has open
// (Transport.RetireAll, as Locks.Close does), busy or not: the engine
// closes their connections itself, and commands in flight on them get
// their replies, or errClosedLocally once the close gives up waiting,
// while the server may still run them.
func (w *world) retireSessions(p *process) {
	if p.crashed {
		return
	}
	w.trace.logf(w, p, "", "fault: the process retires its sessions")
	p.spawn.Go(p.engine.RetireAll)
}

// killClients is an outsider's CLIENT KILL TYPE normal on n: the server
// closes every client connection; the processes notice later.
func (w *world) killClients(n *node) {
	w.stats.ClientKills++
	w.trace.logf(w, nil, "", "fault: every client of %s killed", n.name)
	for _, c := range w.conns {
		if c.node == n && !c.closed && c.generation == n.generation {
			w.serverClose(c)
		}
	}
}

// otherProfile draws a profile other than not.
func (w *world) otherProfile(not sim.Profile) sim.Profile {
	for {
		p := sim.Profiles[w.rng.IntN(len(sim.Profiles))]
		if p != not {
			return p
		}
	}
}

func (w *world) pauseNode(n *node, d time.Duration) {
	n.paused, n.resumeAt = true, w.now+d
	w.stats.NodePauses++
	w.trace.logf(w, nil, "", "fault: %s paused for %s", n.name, d)
	w.schedule(nil, w.now+d, func() {
		n.paused = false
		w.trace.logf(w, nil, "", "%s resumed", n.name)
	})
}

// pauseProcess freezes p (a GC-style pause): none of its events run, while
// its clock, the server's and everyone else's go on.
func (w *world) pauseProcess(p *process, d time.Duration) {
	p.paused = true
	w.stats.ProcessPauses++
	w.trace.logf(w, p, "", "fault: process paused for %s", d)
	w.schedule(nil, w.now+d, func() {
		if p.crashed {
			return
		}
		p.paused = false
		w.trace.logf(w, p, "", "process resumed")
	})
}
