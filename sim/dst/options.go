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
	// CommandTimeout is the per-command deadline (local time); default 30ms.
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
	// NoticeDeadPercent is the chance that a process finds a session the
	// server closed dead before writing on it (conn's idle PING or death
	// watch); otherwise the write vanishes into the dead socket. Default 50.
	NoticeDeadPercent int
	// Mutation breaks the runtime on purpose (tests of the checker only).
	Mutation   Mutation
	Transcript bool // keep the readable transcript (Result.Transcript)
}

// Mutation deliberately breaks the runtime's protocol step, to prove the
// checker catches a wrong implementation. MutationNone is production.
type Mutation int

// The mutations.
const (
	MutationNone Mutation = iota
	// MutationFallbackAfterTimeout: when a ladder command times out, send the
	// next fallback step anyway (an uncertain write replayed).
	MutationFallbackAfterTimeout
	// MutationRenewWithoutCompare: renew with PEXPIRE (no owner compare).
	MutationRenewWithoutCompare
	// MutationSkipFence: never send the fence; report it answered.
	MutationSkipFence
	// MutationReuseFencingToken: a fenced acquisition takes its token from
	// the process's stale view of the counter (its last token + 1) instead
	// of the script's reply.
	MutationReuseFencingToken
	// MutationClosingNotSubmitted: a command whose connection the process
	// closed itself (rueidis.ErrClosing) counts as not submitted, the bug
	// real sockets showed: a delete that may have run restores Held.
	MutationClosingNotSubmitted
)

// Swarm derives a varied configuration from seed (swarm testing: each seed
// switches a different subset of faults on, with different rates), so a
// campaign explores both calm and hostile schedules. One seed in eight is a
// fault-free liveness schedule.
func Swarm(seed uint64) Options {
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
	if r.IntN(4) == 0 {
		o.LeaseMin, o.LeaseMax = 15*time.Millisecond, 50*time.Millisecond
	}
	if r.IntN(8) == 0 {
		o.Liveness = true
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
	return o
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
	def(&o.CommandTimeout, 30*time.Millisecond)
	def(&o.LatencyMin, 100*time.Microsecond)
	def(&o.LatencyMax, 3*time.Millisecond)
	if o.NoticeDeadPercent == 0 {
		o.NoticeDeadPercent = 50
	}
	return o
}
