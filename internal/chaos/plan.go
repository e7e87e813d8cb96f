package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// PCG streams of one seed: every random choice of a schedule comes from one
// of them, so that the choices of one part never depend on how many values
// another part drew.
const (
	streamPlan       = 1<<63 + iota // the shape of the schedule
	streamFaults                    // the fault schedule
	streamOutsider                  // the outsider's keys and leases
	streamPushFaults                // the push faults (a stream of their own: the other faults of a seed stay as they were)
	streamPartition                 // the partition of one process (a stream of its own, as above)
	streamTransport                 // the transport a campaign draws for the seed (DrawTransport)
	streamFair                      // whether the mutex workers wait fairly in this schedule (fair.go)
	// worker w draws from stream w (PCG seeded from the seed and w).
)

// FaultKind names one kind of fault the injector applies.
type FaultKind int

// The fault kinds, in the order of Stats.Faults.
const (
	FaultStall      FaultKind = iota // hold one direction (or both) of one proxied connection
	FaultDelay                       // delay one direction of one proxied connection
	FaultReset                       // reset one proxied connection (RST both ways)
	FaultClose                       // close one proxied connection (FIN to the client)
	FaultBlackHole                   // drop one direction of a connection, then reset it
	FaultPause                       // pause the server (sim Pause; real: stall every socket to it)
	FaultKill                        // CLIENT KILL one proxied connection server-side
	FaultCloseLocks                  // Locks.Close of one process while its workers are mid-flight
	FaultDropPush                    // drop the tracking invalidations (of one key or all) for a while (sim DropPush; sim only)
	FaultDelayPush                   // hold the tracking invalidations for a while, then send them (sim DelayPush; sim only)
	FaultPartition                   // drop everything one process sends on every connection it has, then reset them
	NumFaultKinds                    // how many kinds there are
)

var faultNames = [NumFaultKinds]string{"stall", "delay", "reset", "close", "black-hole", "pause", "kill", "close-locks",
	"drop-push", "delay-push", "partition"}

// String returns the kind's name, as the campaign prints it.
func (k FaultKind) String() string {
	if k < 0 || k >= NumFaultKinds {
		return fmt.Sprintf("FaultKind(%d)", int(k))
	}
	return faultNames[k]
}

// plan is the shape of one schedule: everything the seed decides before the
// workload starts.
type plan struct {
	seed      uint64
	profile   sim.Profile     // the sim node's profile (ignored on a real server)
	processes int             // 2–3 rueidis clients, each with its own Locks
	workers   int             // 4–8 worker goroutines, spread over the processes
	keys      []string        // 2–3 lock keys
	workload  time.Duration   // 300–500 ms
	timeouts  []time.Duration // per process: WithCommandTimeout, 0 for none
	faults    []*fault
	prim      primPlan // the semaphore and the read/write lock (primitives.go)
	fair      bool     // the mutex workers take some locks with lease.WithFairWait (fair.go)
}

// newPlan derives a schedule's plan from its seed alone.
func newPlan(seed uint64) plan {
	rng := rand.New(rand.NewPCG(seed, streamPlan))
	p := plan{
		seed:      seed,
		profile:   sim.Profiles[seed%uint64(len(sim.Profiles))], // consecutive seeds cover every profile
		processes: 2 + rng.IntN(2),
		workers:   4 + rng.IntN(5),
		workload:  between(rng, 300*time.Millisecond, 500*time.Millisecond),
	}
	for i := range 2 + rng.IntN(2) {
		p.keys = append(p.keys, fmt.Sprintf("chaos:%d:k%d", seed, i))
	}
	for range p.processes {
		var d time.Duration
		if rng.IntN(3) == 0 {
			d = between(rng, 20*time.Millisecond, 200*time.Millisecond)
		}
		p.timeouts = append(p.timeouts, d)
	}
	p.faults = planFaults(rand.New(rand.NewPCG(seed, streamFaults)), p.workload, p.processes)
	p.faults = addPushFault(rand.New(rand.NewPCG(seed, streamPushFaults)), p.faults, p.workload, p.keys)
	p.faults = addPartition(rand.New(rand.NewPCG(seed, streamPartition)), p.faults, p.workload, p.timeouts)
	p.prim = newPrimPlan(seed)
	p.fair = rand.New(rand.NewPCG(seed, streamFair)).IntN(2) == 0
	return p
}

// between returns a duration in [lo, hi], whole milliseconds.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	ms := int64(lo / time.Millisecond)
	return time.Duration(ms+rng.Int64N(int64(hi/time.Millisecond)-ms+1)) * time.Millisecond
}

// fault is one planned fault. Its target is an index, resolved when the
// fault is applied: among the proxy's live connections, the server's
// proxied clients, or the processes.
type fault struct {
	kind   FaultKind
	at     time.Duration // offset from the start of the workload
	dur    time.Duration // how long until it is lifted; 0 for a one-shot fault
	dir    faultproxy.Direction
	delay  time.Duration // FaultDelay
	target int
	// process, when not 0, restricts a connection fault to the connections
	// of process-1 (the companion of a FaultCloseLocks).
	process int
	key     string // FaultDropPush, FaultDelayPush: only this key's invalidations; "" all

	// Set by the injector's goroutine when applied.
	conn    *faultproxy.Conn
	conns   []*faultproxy.Conn // FaultPartition: every connection of the process
	killed  int64              // FaultKill: the client id
	over    *atomic.Bool       // FaultDropPush, FaultDelayPush: set when lifted (the sim fault then matches nothing)
	gate    chan struct{}      // FaultDelayPush: closed when lifted (the held invalidations are sent)
	applied bool
	lifted  bool
}

// faultWeights is how often each kind is drawn (FaultCloseLocks is planned
// separately, at most once per schedule).
var faultWeights = [NumFaultKinds]int{
	FaultStall: 3, FaultDelay: 1, FaultReset: 1, FaultClose: 1, FaultBlackHole: 5, FaultPause: 2, FaultKill: 2,
}

// planFaults draws 3–8 faults over the workload and, in a third of the
// seeds, the Locks.Close of one process mid-flight (half of the time while
// one of that process's connections is black-holed towards the client, so
// that commands are busy on the sockets the close retires).
func planFaults(rng *rand.Rand, workload time.Duration, processes int) []*fault {
	var faults []*fault
	for range 3 + rng.IntN(6) {
		at := between(rng, 10*time.Millisecond, workload-20*time.Millisecond)
		faults = append(faults, drawFault(rng, at))
	}
	if rng.IntN(3) == 0 {
		at, proc := between(rng, workload/4, workload*3/4), rng.IntN(processes)
		if rng.IntN(2) == 0 {
			faults = append(faults, &fault{kind: FaultBlackHole, at: at - between(rng, 5*time.Millisecond, 40*time.Millisecond),
				dir: faultproxy.ToClient, dur: between(rng, 60*time.Millisecond, 300*time.Millisecond),
				target: rng.IntN(1 << 16), process: proc + 1})
		}
		faults = append(faults, &fault{kind: FaultCloseLocks, at: at, target: proc})
	}
	slices.SortStableFunc(faults, func(a, b *fault) int { return int(a.at - b.at) })
	return faults
}

// addPushFault adds, in half of the seeds, one push fault (drop or delay,
// of one key's invalidations or all) to faults, kept in time order.
func addPushFault(rng *rand.Rand, faults []*fault, workload time.Duration, keys []string) []*fault {
	if rng.IntN(2) == 0 {
		return faults
	}
	f := &fault{kind: FaultDropPush, at: between(rng, 10*time.Millisecond, workload-20*time.Millisecond),
		dur: between(rng, 20*time.Millisecond, 300*time.Millisecond)}
	if rng.IntN(2) == 0 {
		f.kind = FaultDelayPush
	}
	if rng.IntN(2) == 0 {
		f.key = keys[rng.IntN(len(keys))]
	}
	faults = append(faults, f)
	slices.SortStableFunc(faults, func(a, b *fault) int { return int(a.at - b.at) })
	return faults
}

// addPartition adds, in half of the seeds, the partition of one process
// from the server (everything it sends on the connections it has then is
// dropped, longer than most leases, then those connections are reset),
// kept in time order. It picks a process with a command timeout when there
// is one: its renewals then end uncertain while its lease still runs,
// which the library must answer by giving the lease up, not by believing
// it renewed.
func addPartition(rng *rand.Rand, faults []*fault, workload time.Duration, timeouts []time.Duration) []*fault {
	if rng.IntN(2) == 0 {
		return faults
	}
	proc := rng.IntN(len(timeouts))
	for i := range timeouts {
		if j := (proc + i) % len(timeouts); timeouts[j] > 0 {
			proc = j
			break
		}
	}
	f := &fault{kind: FaultPartition, at: between(rng, 20*time.Millisecond, workload/2), dir: faultproxy.ToServer,
		dur: between(rng, 150*time.Millisecond, 450*time.Millisecond), process: proc + 1}
	faults = append(faults, f)
	slices.SortStableFunc(faults, func(a, b *fault) int { return int(a.at - b.at) })
	return faults
}

// drawFault draws one fault of a weighted kind at offset at.
func drawFault(rng *rand.Rand, at time.Duration) *fault {
	total := 0
	for _, w := range faultWeights {
		total += w
	}
	n, kind := rng.IntN(total), FaultKind(0)
	for ; n >= faultWeights[kind]; kind++ {
		n -= faultWeights[kind]
	}
	f := &fault{kind: kind, at: at, target: rng.IntN(1 << 16)}
	dirs := []faultproxy.Direction{faultproxy.ToClient, faultproxy.ToServer, faultproxy.Both}
	switch kind {
	case FaultStall:
		f.dir, f.dur = dirs[rng.IntN(3)], between(rng, 5*time.Millisecond, 200*time.Millisecond)
	case FaultDelay:
		f.dir, f.dur = dirs[rng.IntN(2)], between(rng, 20*time.Millisecond, 200*time.Millisecond)
		f.delay = between(rng, 5*time.Millisecond, 100*time.Millisecond)
	case FaultBlackHole:
		f.dir = []faultproxy.Direction{faultproxy.ToClient, faultproxy.ToClient, faultproxy.ToClient, faultproxy.ToServer, faultproxy.Both}[rng.IntN(5)]
		f.dur = between(rng, 20*time.Millisecond, 300*time.Millisecond) // then Reset
	case FaultPause:
		f.dur = between(rng, 10*time.Millisecond, 300*time.Millisecond)
	}
	return f
}

// decision is everything a worker decides for one iteration, drawn up front
// in a fixed order so that the n-th iteration of a worker decides the same
// whatever happened before (only how many iterations run depends on timing).
type decision struct {
	key            int
	lease          time.Duration // 150–400 ms
	keepAlive      bool
	wait           time.Duration // WithWait, 0 for one try
	acquireTimeout time.Duration // sometimes very short, to cut acquisitions off
	hold           time.Duration // 0–300 ms
	reset          bool          // ResetExpiry during the hold
	resetAfter     time.Duration // when, into the hold
	resetTimeout   time.Duration
	close          bool // Close instead of Release
	releaseTimeout time.Duration
	backoff        time.Duration // pause after a failed acquisition
}

// normalTimeout bounds a call that is not meant to be cut off: longer than
// any fault (a pause lasts at most 300 ms), so only the library's own
// command timeout or a broken connection ends it early.
const normalTimeout = 2 * time.Second

// decide draws one iteration's decisions.
func decide(rng *rand.Rand, keys int) decision {
	d := decision{key: rng.IntN(keys), lease: between(rng, 150*time.Millisecond, 400*time.Millisecond), keepAlive: rng.IntN(2) == 0}
	if rng.IntN(4) == 0 {
		d.wait = between(rng, 10*time.Millisecond, 100*time.Millisecond)
	}
	d.acquireTimeout = shortOrNormal(rng, 4, 2*time.Millisecond, 30*time.Millisecond)
	d.hold = between(rng, 0, 300*time.Millisecond)
	d.reset = rng.IntN(3) == 0
	d.resetAfter = time.Duration(rng.Float64() * float64(d.hold))
	d.resetTimeout = shortOrNormal(rng, 2, 2*time.Millisecond, 30*time.Millisecond)
	d.close = rng.IntN(4) == 0
	d.releaseTimeout = shortOrNormal(rng, 4, 1*time.Millisecond, 10*time.Millisecond)
	d.backoff = between(rng, 0, 20*time.Millisecond)
	return d
}

// shortOrNormal returns, one time in n, a very short timeout in [lo, hi];
// otherwise normalTimeout.
func shortOrNormal(rng *rand.Rand, n int, lo, hi time.Duration) time.Duration {
	short := between(rng, lo, hi)
	if rng.IntN(n) == 0 {
		return short
	}
	return normalTimeout
}
