package dst

import (
	"math/rand/v2"
	"time"

	"github.com/respire-go/respire/sim"
)

// Options configures one schedule. Every fault has a named percentage; a
// zero percentage switches that fault off. Use Swarm to derive a varied
// configuration from a seed. The zero value (apart from Seed) is a
// fault-free schedule with the defaults below.
type Options struct {
	Seed      uint64        // the only source of randomness
	Processes int           // client processes; default 3
	Keys      int           // lock keys; default 1
	Steps     int           // scheduler steps before the run ends; default 400
	Horizon   time.Duration // virtual time after which no new user calls start; default 2s
	Profile   sim.Profile   // starting server profile; default Valkey90
	// DriftPPM bounds each process's clock rate: it runs at 1±DriftPPM/1e6.
	DriftPPM int64
	// Lease durations are drawn from [LeaseMin, LeaseMax]; defaults 40ms-200ms.
	LeaseMin, LeaseMax time.Duration
	// CommandTimeout is the driver's command timeout (actor.Config's, on
	// the process's clock); default 30ms, negative for none (the
	// production default: a command then ends with its caller's ctx or the
	// lease deadline).
	CommandTimeout time.Duration
	// Network latency per direction is drawn from [LatencyMin, LatencyMax];
	// defaults 100µs-3ms.
	LatencyMin, LatencyMax time.Duration
	// Liveness makes every user acquisition wait (polling, with a budget long
	// enough for every other process to hold once) and every holder release
	// about LeaseMin/2 after acquiring; with faults off the checker then
	// asserts that each waiting acquirer acquires (invariant 7).
	Liveness bool
	// FencedPercent is the share of handles that are fencing-token locks
	// (coordination/: the fenced acquisition script and a counter per key);
	// default 0, none.
	FencedPercent int
	// WithoutPush turns the drivers' push off (lease.WithoutPush): waiters
	// poll, holders learn of a change at their next renewal. By default
	// every process has a tracking watcher per node, as production does.
	WithoutPush bool
	// Primitives adds a lease semaphore of SemaphoreLimit permits (default
	// 2) and a read/write lock to the mutex keys (prims.go).
	Primitives     bool
	SemaphoreLimit int
	// CrashPercent is per tick: a process crashes for good (at most all
	// but one; its leases end on the servers by themselves).
	CrashPercent int
	// Guarded makes the holders of mutex keys (fenced ones included) write
	// through guarded writes (guard.go: Lock.Guard of an INCR of the key's
	// data counter) among their other calls; invariant 14 judges them.
	Guarded bool
	// FairPercent is the share of acquisitions (of the mutex keys and of
	// the primitives) that wait fairly, in the lock's queue (faircheck.go).
	FairPercent int
	// Crowd is how many more acquisitions of a mutex key a process may
	// have waiting at once, beside its user's handle of that key (crowd.go):
	// a release of one process's handle then hands the key over to a
	// waiter of the same process (rule PushHandsOverWithinOneLocks).
	// Default 0, none.
	Crowd int

	// Fault rates. "Per tick" faults are drawn by the chaos loop every
	// 1-10ms of virtual time; the others at each command or user decision.
	DropBeforeExecPercent int // per command: connection lost before the server runs it
	DropAfterExecPercent  int // per command: the server runs it, then the connection is lost
	DelayReplyPercent     int // per command: the reply arrives after the command deadline
	PauseNodePercent      int // per tick: a node stops processing for up to LeaseMax/2
	FailoverPercent       int // per tick: a node is replaced by one of another profile
	MoveSlotPercent       int // per tick: a key's slot moves (MOVED) or migrates (ASK) to a new node, once per schedule
	DenyACLPercent        int // per tick: ACL denies CLIENT, DELEX, DELIFEQ or EVALSHA on a node
	CancelPercent         int // per user decision: a pending call is cancelled
	PauseProcessPercent   int // per tick: a process freezes (GC-style) for 1-2 × LeaseMax
	DelayWritePercent     int // per command: it waits up to 5ms for in-flight capacity first
	CloseSessionPercent   int // per tick: a process closes one of its sessions itself, busy or not (another lock's fence, Locks.Close)
	KillClientsPercent    int // per tick: an outsider kills every client of a node (CLIENT KILL TYPE normal)
	CloseClientPercent    int // per tick: a process's user closes its Redis client under its locks (conn.Client.Closed)
	DropPushPercent       int // per invalidation: the server's push to a watcher is lost (the connection lives)
	DelayPushPercent      int // per invalidation: it reaches the watcher up to LeaseMax/2 late (and so does what follows it)
	// OverwritePercent is per tick: an outsider overwrites a held key with
	// its own token (no lock can prevent that); its holder must learn of
	// it (invariant 9) and is exempt from invariant 1 meanwhile.
	OverwritePercent int
	// Unpipelined gives the processes' clients connections that take one
	// pipeline at a time (conn.Conn.Pipelined false, as go-redis'), so
	// that the engine batches its callers itself; by default they are
	// pipelined (rueidis, valkey-go).
	Unpipelined bool
	// PerCallerWriter makes the pipelined connections say
	// conn.PerCallerWriter, as rueidis' and valkey-go's adapters do: the
	// engine gives each session a drainer, so that a caller who finds the
	// session idle sends its own commands and those who come while a round
	// trip is on the wire leave together in one pipeline when it ends.
	// Without it a session's callers hand their commands to the connection
	// each from their own goroutine (the root module's own client). No
	// effect with Unpipelined (every session is drained there).
	PerCallerWriter bool
	// ListenRedirect gives the clients listen-only listeners (go-redis'
	// way: the engine tracks with REDIRECT on a connection of its own); by
	// default a listener is a RESP3 connection that carries the tracked
	// reads too.
	ListenRedirect bool
	// NoticeDeadPercent is the chance that a process finds a session the
	// server closed dead before writing on it (conn's idle PING or death
	// watch); otherwise the write vanishes into the dead socket. Default 50.
	NoticeDeadPercent int
	// Mutation breaks the runtime on purpose (tests of the checker only).
	Mutation   Mutation
	Transcript bool // keep the readable transcript (Result.Transcript)
	// Rerun is the command that replays these Options when they are not
	// Swarm(Seed)'s (a test sets its own go test line); Result.Replay
	// prints it. Swarm's options need none.
	Rerun string

	giveUp    bool // tests of invariant 7: every acquisition tries once, whatever its wait
	judgePush bool // tests of invariant 9: judge it even with push off
}

// Mutation deliberately breaks the simulated transport (the part of a
// schedule that stands in for conn), to prove the checker catches a wrong
// implementation under the real driver. MutationNone is production. (A
// mutation of the driver itself is a build tag of package actor:
// respire_mutation_renewal.)
type Mutation int

// The mutations.
const (
	MutationNone Mutation = iota
	// MutationFallbackAfterTimeout: when a ladder command's wait ends
	// before its reply, send the next fallback step anyway (an uncertain
	// write replayed).
	MutationFallbackAfterTimeout
	// MutationRenewWithoutCompare: renew with PEXPIRE (no owner compare).
	MutationRenewWithoutCompare
	// MutationSkipFence: never send the fence; report it answered.
	MutationSkipFence
	// MutationReuseFencingToken: a fenced acquisition hands the driver a
	// token from the process's stale view of the counter (its last token
	// + 1) instead of the script's reply.
	MutationReuseFencingToken
	// MutationClosingNotSubmitted: a command whose connection the process
	// closed itself (rueidis.ErrClosing) counts as not submitted on a
	// retired session, the bug real sockets showed (conn's build tag
	// respire_mutation_errclosing does the same to conn.ClassifyTransport).
	MutationClosingNotSubmitted
	// MutationWriterIgnoresReaders: a writer's acquisition script is sent
	// with a readers key nobody uses, so it takes the write hold while
	// readers are live (invariant 11).
	MutationWriterIgnoresReaders
	// MutationSemaphoreCountsEnded: a permit's acquisition script counts
	// every member of the semaphore, ended leases included, and removes
	// none (invariant 13: a crashed or lapsed holder keeps its permit).
	MutationSemaphoreCountsEnded
	// MutationReaderIgnoresWriter: a reader's acquisition script does not
	// look at the writer key, so readers come in while a writer holds the
	// lock or waits for it (invariants 11 and 12).
	MutationReaderIgnoresWriter
)

// Swarm derives a varied configuration from seed (swarm testing: each seed
// switches a different subset of faults on, with different rates), so a
// campaign explores both calm and hostile schedules. One seed in eight is a
// fault-free liveness schedule.
func Swarm(seed uint64) Options { return swarm(seed, true) }

// swarm is Swarm, with the primitives workload drawn only when withPrims is
// set (the mutex-only schedule of a seed, which tests that pin a seed's
// mutex trace replay).
func swarm(seed uint64, withPrims bool) Options {
	r := rand.New(rand.NewPCG(seed, 0x5eed5eed))
	o := Options{Seed: seed, Transcript: false}
	o.Processes = 2 + r.IntN(3)
	o.Keys = 1 + r.IntN(2)
	o.Profile = sim.Profiles[r.IntN(len(sim.Profiles))]
	o.DriftPPM = int64(r.IntN(3)) * 10000 // 0, 1% or 2%
	// fenced locks in one seed in four, drawn apart so that the other
	// choices of a seed stay what they were
	if f := rand.New(rand.NewPCG(seed, 0xfe4ced)); f.IntN(4) == 0 {
		o.FencedPercent = 20 + f.IntN(41)
	}
	// timing regimes: short leases make renewals hit the renewal delay's 10ms floor; a
	// command deadline longer than the lease leaves only the lease deadline
	o.CommandTimeout = []time.Duration{10, 30, 30, 80}[r.IntN(4)] * time.Millisecond
	// push off in one seed in four, no command timeout in one in four (the
	// production defaults are push on, no timeout), drawn apart as above
	if f := rand.New(rand.NewPCG(seed, 0x9054)); f.IntN(4) == 0 {
		o.WithoutPush = true
	} else if f.IntN(3) == 0 {
		o.CommandTimeout = -1
	}
	if r.IntN(4) == 0 {
		o.LeaseMin, o.LeaseMax = 15*time.Millisecond, 50*time.Millisecond
	}
	o.clientKind(rand.New(rand.NewPCG(seed, 0xc11e47)))
	o.perCallerWriter(rand.New(rand.NewPCG(seed, 0xd4a1e5)))
	prims := rand.New(rand.NewPCG(seed, 0x5e3a40e))
	if withPrims {
		o.primitives(prims)
		// guarded writes in one seed in two, drawn apart as above
		o.Guarded = rand.New(rand.NewPCG(seed, 0x9a4d)).IntN(2) == 0
		// fair waiting in one seed in three, drawn apart as above
		if f := rand.New(rand.NewPCG(seed, 0xfa1e)); f.IntN(3) == 0 {
			o.FairPercent = 30 + f.IntN(51)
		}
	}
	// a crowd of waiters per process in one seed in two, drawn apart as above
	if f := rand.New(rand.NewPCG(seed, 0xc40d)); f.IntN(2) == 0 {
		o.Crowd = 1 + f.IntN(4)
	}
	if r.IntN(8) == 0 {
		o.Liveness = true
		return o
	}
	if f := rand.New(rand.NewPCG(seed, 0x7e57)); !o.WithoutPush && f.IntN(8) == 0 {
		// a push probe: outsiders overwrite held keys and nothing delays
		// what their holders learn (invariant 9)
		o.OverwritePercent, o.CancelPercent = 2+f.IntN(4), f.IntN(20)
		return o
	}
	pick := func(max int) int {
		if r.IntN(2) == 0 {
			return 0
		}
		return 1 + r.IntN(max)
	}
	o.DropBeforeExecPercent = pick(10)
	o.DropAfterExecPercent = pick(10)
	o.DelayReplyPercent = pick(10)
	o.PauseNodePercent = pick(2)
	o.FailoverPercent = pick(2)
	o.MoveSlotPercent = pick(3)
	o.DenyACLPercent = pick(2)
	o.CancelPercent = pick(30)
	o.PauseProcessPercent = pick(2)
	o.DelayWritePercent = pick(30)
	o.CloseSessionPercent = pick(3)
	o.KillClientsPercent = pick(2)
	o.pushFaults(rand.New(rand.NewPCG(seed, 0xd209)))
	if f := rand.New(rand.NewPCG(seed, 0xc105ed)); f.IntN(8) == 0 {
		o.CloseClientPercent = 1 // drawn apart, so that the other choices of a seed stay what they were
	}
	if o.Primitives && prims.IntN(3) == 0 {
		o.CrashPercent = 1
	}
	return o
}

// clientKind draws from r (a PRNG of its own, so that the other choices
// of a seed stay what they were) which kind of client library the
// processes run on: rueidis' kind (pipelined connections, listeners that
// carry the tracked reads) one seed in two, go-redis' kind (one pipeline
// at a time, the engine batching; listen-only listeners, REDIRECT) one in
// four, and pipelined connections with listen-only listeners one in four.
// Whether pipelined connections write per caller is drawn apart
// (perCallerWriter).
func (o *Options) clientKind(r *rand.Rand) {
	switch r.IntN(4) {
	case 0:
		o.Unpipelined, o.ListenRedirect = true, true
	case 1:
		o.ListenRedirect = true
	}
}

// perCallerWriter draws from r (a PRNG of its own, so that the other
// choices of a seed stay what they were) whether a pipelined client writes
// each caller's commands as they come (rueidis', valkey-go's: the engine
// drains the sessions, Options.PerCallerWriter) — one pipelined seed in
// two — or hands them to the client as they come (the root module's own).
// With clientKind's draw that makes the three kinds of client that ship:
// per-caller writers 3 seeds in 8, the root client's kind 3 in 8, go-redis'
// 1 in 4.
func (o *Options) perCallerWriter(r *rand.Rand) {
	if !o.Unpipelined && r.IntN(2) == 0 {
		o.PerCallerWriter = true
	}
}

// primitives draws from r (a PRNG of its own, so that the other choices
// of a seed stay what they were) whether the schedule has the primitives
// workload — one seed in two — and then its semaphore's limit (2 or 3) and
// three to five processes to contend for it.
func (o *Options) primitives(r *rand.Rand) {
	if r.IntN(2) != 0 {
		return
	}
	o.Primitives, o.SemaphoreLimit = true, 2+r.IntN(2)
	o.Processes = 3 + r.IntN(3)
}

// withDefaults fills zero fields.
func (o Options) withDefaults() Options {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.Processes <= 0 {
		o.Processes = 3
	}
	if o.Keys <= 0 {
		o.Keys = 1
	}
	if o.Steps <= 0 {
		o.Steps = 400
	}
	if o.Profile == "" {
		o.Profile = sim.Valkey90
	}
	def(&o.Horizon, 2*time.Second)
	def(&o.LeaseMin, 40*time.Millisecond)
	def(&o.LeaseMax, 200*time.Millisecond)
	if o.CommandTimeout == 0 {
		o.CommandTimeout = 30 * time.Millisecond
	}
	def(&o.LatencyMin, 100*time.Microsecond)
	def(&o.LatencyMax, 3*time.Millisecond)
	if o.SemaphoreLimit <= 0 {
		o.SemaphoreLimit = 2
	}
	if o.NoticeDeadPercent == 0 {
		o.NoticeDeadPercent = 50
	}
	return o
}

// pushFaults draws the push faults of a schedule with push on from r (a
// PRNG of their own, so that the other choices of a seed stay what they
// were): lost and late invalidations in one seed in four, outsiders'
// overwrites in one in eight.
func (o *Options) pushFaults(r *rand.Rand) {
	if o.WithoutPush {
		return
	}
	if r.IntN(4) == 0 {
		o.DropPushPercent, o.DelayPushPercent = r.IntN(30), r.IntN(30)
	}
	if r.IntN(8) == 0 {
		o.OverwritePercent = 1 + r.IntN(3)
	}
}

// commandTimeout is the driver's command timeout (0: none).
func (o Options) commandTimeout() time.Duration { return max(o.CommandTimeout, 0) }

// pushProbe reports whether the schedule judges invariant 9: push on, and
// no fault but the outsiders' overwrites (a lost, late or delayed message
// or a paused party delays what a holder learns without bound). A holder
// in Recovering acts on the push hub's refutation too (statemachine:
// stepOwnerRefuted): without that, primitives schedules with a 10 ms
// command timeout broke the bound (a renewal's fallback ladder on a fresh
// session outlasting the timeout again and again kept the holder
// Recovering, Swarm(1019215) in an earlier build).
func (o Options) pushProbe() bool {
	return (!o.WithoutPush || o.judgePush) && o.OverwritePercent > 0 && o.DropBeforeExecPercent == 0 && o.DropAfterExecPercent == 0 &&
		o.DelayReplyPercent == 0 && o.PauseNodePercent == 0 && o.FailoverPercent == 0 && o.MoveSlotPercent == 0 &&
		o.DenyACLPercent == 0 && o.PauseProcessPercent == 0 && o.DelayWritePercent == 0 &&
		o.CloseSessionPercent == 0 && o.KillClientsPercent == 0 && o.DropPushPercent == 0 && o.DelayPushPercent == 0 &&
		o.CloseClientPercent == 0
}
