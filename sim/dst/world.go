package dst

import (
	"math/rand/v2"
	"time"
)

// epoch is virtual time zero as the server's wall clock sees it.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// event is one pending thing the scheduler may choose: a timer, a reply
// delivery, a user action. Process events are disabled while their process
// is paused; world events (proc == nil) never are.
type event struct {
	due       time.Duration // true virtual time
	proc      *process
	fire      func()
	cancelled bool
}

// world is one simulated universe: the servers, the client processes (each
// with its actor.Driver), the network, the virtual clock and the checker.
// Not safe for concurrent use.
type world struct {
	opt        Options
	rng        *rand.Rand
	fairRng    *rand.Rand            // draws of fair waiting only, so the other draws of a seed stay what they were
	now        time.Duration         // true virtual time since epoch
	nodes      []*node               // nodes[0] is the first owner of every key
	owner      map[string]*node      // the cluster's slot map (key -> owning node)
	moved      bool                  // the one slot move of this schedule happened
	migrating  map[string]*migration // slots in their ASK phase, by key
	prims      []*primitive          // Options.Primitives: the semaphore and the read/write lock
	procs      []*process
	handles    []*handle
	live       []*handle // handles the checker still watches
	events     []*event
	conns      []*connection
	keys       []string
	trace      transcript
	check      checker
	nextID     int64
	outsiders  int   // outsiders' overwrites so far
	scriptRuns int64 // fenced scripts that handed out a token, in server order
	steps      int
	stats      Stats
	tasks      tasks // the driver's goroutines and user calls (tasks.go)
	done       bool
}

// Now implements sim.Clock: the server's view of true virtual time.
func (w *world) Now() time.Time { return epoch.Add(w.now) }

func (w *world) id() int64 {
	w.nextID++
	return w.nextID
}

// schedule adds an event due at true time due.
func (w *world) schedule(proc *process, due time.Duration, fire func()) *event {
	if due < w.now {
		due = w.now
	}
	ev := &event{due: due, proc: proc, fire: fire}
	w.events = append(w.events, ev)
	return ev
}

// enabled reports whether ev may be chosen now.
func (w *world) enabled(ev *event) bool {
	return !ev.cancelled && (ev.proc == nil || !ev.proc.paused)
}

// step runs one scheduler choice. It returns false when nothing is pending.
// Among the enabled events that are due, one is picked uniformly at random;
// if none is due, the clock advances to the earliest enabled one. Network
// deliveries are events too (see network.go), so ordering between
// connections is the scheduler's choice while each connection stays FIFO.
func (w *world) step() bool {
	w.compact()
	earliest := time.Duration(-1)
	for _, ev := range w.events {
		if w.enabled(ev) && (earliest < 0 || ev.due < earliest) {
			earliest = ev.due
		}
	}
	if earliest < 0 {
		return false
	}
	if earliest > w.now {
		w.now = earliest
	}
	var ready []int
	for i, ev := range w.events {
		if w.enabled(ev) && ev.due <= w.now {
			ready = append(ready, i)
		}
	}
	i := ready[w.rng.IntN(len(ready))]
	ev := w.events[i]
	w.events[i] = w.events[len(w.events)-1]
	w.events = w.events[:len(w.events)-1]
	ev.cancelled = true
	ev.fire()
	w.wakeReady()
	return true
}

// compact drops cancelled events.
func (w *world) compact() {
	kept := w.events[:0]
	for _, ev := range w.events {
		if !ev.cancelled {
			kept = append(kept, ev)
		}
	}
	for i := len(kept); i < len(w.events); i++ {
		w.events[i] = nil
	}
	w.events = kept
}

// between draws a duration uniformly from [lo, hi].
func (w *world) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)+1))
}

// chance is true with probability percent/100.
func (w *world) chance(percent int) bool {
	return percent > 0 && w.rng.IntN(100) < percent
}

// The named fault predicates: every random fault decision goes through one.

func (w *world) shouldDropBeforeExec() bool { return w.chance(w.opt.DropBeforeExecPercent) }
func (w *world) shouldDropAfterExec() bool  { return w.chance(w.opt.DropAfterExecPercent) }
func (w *world) shouldDelayReplyPastDeadline() bool {
	return w.chance(w.opt.DelayReplyPercent)
}
func (w *world) shouldPauseNode() bool    { return w.chance(w.opt.PauseNodePercent) }
func (w *world) shouldFailover() bool     { return w.chance(w.opt.FailoverPercent) }
func (w *world) shouldMoveSlot() bool     { return w.chance(w.opt.MoveSlotPercent) }
func (w *world) shouldDenyACL() bool      { return w.chance(w.opt.DenyACLPercent) }
func (w *world) shouldCancel() bool       { return w.chance(w.opt.CancelPercent) }
func (w *world) shouldPauseProcess() bool { return w.chance(w.opt.PauseProcessPercent) }
func (w *world) shouldDelayWrite() bool   { return w.chance(w.opt.DelayWritePercent) }
func (w *world) shouldCloseSession() bool { return w.chance(w.opt.CloseSessionPercent) }
func (w *world) shouldKillClients() bool  { return w.chance(w.opt.KillClientsPercent) }
func (w *world) shouldNoticeDead() bool   { return w.chance(w.opt.NoticeDeadPercent) }

// process clock: each process's monotonic clock runs at rate
// 1 + driftPPM/1e6 from a private offset.

func (p *process) local(t time.Duration) time.Duration {
	return p.offset + t + time.Duration(int64(t)*p.driftPPM/1_000_000)
}

// trueAt returns the earliest true time at which p's clock reads at least
// local.
func (p *process) trueAt(local time.Duration) time.Duration {
	d := int64(local - p.offset)
	if d <= 0 {
		return 0
	}
	den := 1_000_000 + p.driftPPM
	t := (d*1_000_000 + den - 1) / den
	for p.local(time.Duration(t)) < local {
		t++
	}
	for t > 0 && p.local(time.Duration(t-1)) >= local {
		t--
	}
	return time.Duration(t)
}
