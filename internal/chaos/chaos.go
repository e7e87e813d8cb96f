// Package chaos runs randomised fault schedules through the real client —
// rueidis, the lease package, real sockets through an in-process fault
// proxy — and checks the lock's promises from what the clients were told and
// what the server executed. cmd/chaos is the campaign (make chaos).
//
// One schedule (Run) starts a sim node (or uses a real redis-server), puts a
// faultproxy.Proxy in front of it and runs 2–3 "processes" (each a rueidis
// client and a lease.Locks) with 4–8 workers that acquire, hold, reset and
// release 2–3 lock keys, while an outsider connected directly to the server
// takes free keys with SET NX PX and an injector stalls, delays, black-holes,
// resets and closes connections, partitions one process from the server
// (in half of the seeds, longer than most leases), pauses the server,
// kills clients server-side and closes a process's Locks mid-flight. When
// everything is closed, the checker holds six rules:
//
//   - no-two-owners: per key, the intervals during which different owners
//     believed they held it (a handle from Acquire's return to the earliest
//     of its release call, its keep-alive's end and the furthest
//     RemainingEstimate it promised; an outsider from its reply to its send
//     plus PX) overlap by no more than the later-ending one's drift margin;
//   - no-uncertain-resend (sim only): per token, at most one executed SET NX
//     and one executed delete that was not refused;
//   - fence-is-final (sim only): nothing runs for a client after an executed
//     CLIENT KILL ID … ADDR … of it;
//   - lease-outlived (sim only): no handle's promise (a sampled
//     now+RemainingEstimate) ends later, by more than its drift margin,
//     than its token's lease on the server: the last write of the token
//     that ran (SET NX PX, or a renewal that answered it renewed) plus its
//     PX;
//   - no-guarded-write-after-takeover (sim only): a guarded write
//     (Lock.Guard, which workers make while they hold a key) that wrote ran
//     for the token of the key's latest acquisition before it (guarded.go);
//   - no-orphan: no token survives whose owner was told it released it or
//     that nobody was given, and (on a sim node, over the whole history) a
//     clean-up that saw an abandoned acquisition's token deletes it; leases
//     that expired before their clean-up could reach the server are counted
//     in Stats.AbandonedExpired (orphans.go).
//
// Determinism: the seed alone decides the schedule's shape, the fault
// schedule (offsets, kinds, durations, target indexes) and every worker's
// decisions (the n-th iteration of a worker decides the same whatever
// happened before). Real time does not replay: what a fault hits (which
// connection is live at that index, which command is in flight) and how many
// iterations run vary from run to run, so a failing seed is a strong hint,
// not a guaranteed reproduction; run it a few times.
//
// Limits: a real server has no execution history, so the three sim-only rules
// are skipped there (noted) and an orphan is only seen while it lives; a
// belief is known from samples taken every 20 ms at most while held, so a
// promise the library made between two samples and broke before the next
// one can go unseen; resets always renew to the lock's own duration (a
// shortening renewal is not exercised); renewals are not counted by
// no-uncertain-resend (a keep-alive renews on purpose).
package chaos

import (
	"fmt"
	"strings"
	"time"

	"github.com/respire-go/respire/sim"
)

// Options selects one schedule.
type Options struct {
	// Seed decides the schedule (see the package doc).
	Seed uint64
	// Target is the host:port of a real redis-server; "" starts an
	// in-process sim node for the schedule, with a profile chosen from the
	// seed.
	Target string
	// Password of Target's default user.
	Password string
	// Transport is the client the processes run their locks on (the zero
	// Transport is Wire).
	Transport Transport
}

// Rule names one of the checker's rules.
type Rule string

// The checker's rules.
const (
	RuleTwoOwners      Rule = "no-two-owners"       // belief intervals of different tokens of one key overlap
	RuleResent         Rule = "no-uncertain-resend" // a token's SET NX or delete ran twice
	RuleFencedRan      Rule = "fence-is-final"      // a command of a fenced connection ran after the fence
	RuleOrphan         Rule = "no-orphan"           // a token nobody may hold is left on the server
	RuleOutlived       Rule = "lease-outlived"      // a handle's promise outlasted its token's lease on the server
	RuleOverLimit      Rule = "no-more-than-limit"  // more permits' Contexts live at once than the semaphore's limit
	RuleReaderWriter   Rule = "no-reader-with-writer"
	RuleWriterStarved  Rule = "writer-not-starved"  // a reader admitted, or the lock left free, while the writer waited
	RulePermitFrees    Rule = "permit-frees"        // a permit waiter gave up though fewer than limit leases could be held
	RuleFairOrder      Rule = "fair-order"          // a fair waiter was granted the lock while one with an earlier ticket waited
	RuleFairWakeUp     Rule = "fair-no-lost-wakeup" // a free key stayed free though a queued waiter renewed its place
	RuleScheduleBroken Rule = "schedule-error"      // the schedule itself could not run (setup failed)
)

// Violation is one broken rule, with its evidence.
type Violation struct {
	Rule     Rule
	Key      string
	Evidence string
}

// String renders the violation on one line per piece of evidence.
func (v Violation) String() string {
	return fmt.Sprintf("%s (key %s): %s", v.Rule, v.Key, v.Evidence)
}

// Stats counts what a schedule (or a campaign, see Add) exercised.
type Stats struct {
	Schedules        int // schedules run
	AcquireCalls     int // Locks.Acquire calls
	Acquisitions     int // ... that returned a lock
	NotAcquired      int // ... that found another owner (ErrNotAcquired)
	Abandoned        int // ... that failed after the SET may have run (uncertain, or cut off by their ctx)
	Releases         int // Lock.Release and Lock.Close calls
	Resets           int // Lock.ResetExpiry calls
	Uncertain        int // calls that returned an error matching conn.ErrOutcomeUnknown
	KeepAliveLost    int // keep-alives that ended with ErrOwnershipLost
	OutsiderWrites   int // outsider SET NX that took a key
	Fences           int // CLIENT KILL … ADDR the sim executed (0 on a real server)
	AbandonedExpired int // abandoned acquisitions' leases that expired before their clean-up reached the server
	HandOvers        int // releases that carried a waiter of their Locks' try (rule PushHandsOverWithinOneLocks)
	PrimCalls        int // Semaphore.Acquire, RWLock.RLock and RWLock.Lock calls
	Permits          int // ... that returned a permit
	Reads            int // ... that returned a read hold
	Writes           int // ... that returned the write hold
	WriterGaveUp     int // write acquisitions that waited and found the lock held for the whole wait
	PermitGaveUp     int // permit acquisitions that waited and found the semaphore full for the whole wait
	Crashed          int // permits whose holder died holding them (no renewal, no release)
	GuardedWrites    int // guarded writes that ran (Lock.Guard returned nil)
	GuardRefusals    int // ... refused: the key was not the holder's any more (the lock ended there)
	GuardNotWritten  int // ... whose reply was lost, settled as never run
	GuardUnknown     int // ... whose reply was lost and that settling could not tell
	StaleGuards      int // guard scripts the sim node ran for a token after another owner's acquisition (refused unless broken)
	FairCalls        int // Acquire calls with lease.WithFairWait (fair.go)
	// ClosestGap is the smallest gap seen between the end of one owner's
	// belief, when its lease ended it (not a release call), and the start of
	// the next owner's on the same key (negative for an overlap): how close
	// no-two-owners came to breaking.
	ClosestGap time.Duration
	gapSeen    bool               // ClosestGap is set
	Faults     [NumFaultKinds]int // faults applied, per kind
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.Schedules += o.Schedules
	s.HandOvers += o.HandOvers
	s.AcquireCalls += o.AcquireCalls
	s.Acquisitions += o.Acquisitions
	s.NotAcquired += o.NotAcquired
	s.Abandoned += o.Abandoned
	s.Releases += o.Releases
	s.Resets += o.Resets
	s.Uncertain += o.Uncertain
	s.KeepAliveLost += o.KeepAliveLost
	s.OutsiderWrites += o.OutsiderWrites
	s.Fences += o.Fences
	s.AbandonedExpired += o.AbandonedExpired
	s.PrimCalls += o.PrimCalls
	s.Permits += o.Permits
	s.Reads += o.Reads
	s.Writes += o.Writes
	s.WriterGaveUp += o.WriterGaveUp
	s.PermitGaveUp += o.PermitGaveUp
	s.Crashed += o.Crashed
	s.GuardedWrites += o.GuardedWrites
	s.GuardRefusals += o.GuardRefusals
	s.GuardNotWritten += o.GuardNotWritten
	s.GuardUnknown += o.GuardUnknown
	s.StaleGuards += o.StaleGuards
	s.FairCalls += o.FairCalls
	if o.gapSeen && (!s.gapSeen || o.ClosestGap < s.ClosestGap) {
		s.ClosestGap, s.gapSeen = o.ClosestGap, true
	}
	for i, n := range o.Faults {
		s.Faults[i] += n
	}
}

// String renders the counts on two lines.
func (s Stats) String() string {
	var faults []string
	for k, n := range s.Faults {
		faults = append(faults, fmt.Sprintf("%s %d", FaultKind(k), n))
	}
	return fmt.Sprintf("%d schedules, %d acquisitions (%d calls, %d not acquired, %d abandoned), %d releases, %d resets, "+
		"%d uncertain outcomes, %d fences seen, %d keep-alives lost, %d outsider writes, "+
		"%d abandoned leases expired before their clean-up, closest owners %s apart after an expiry, %d of the calls fair, "+
		"%d hand-overs\n"+
		"semaphore and read/write lock: %d calls, %d permits, %d read holds, %d write holds, %d writers that waited in vain, "+
		"%d permits of holders that died, %d permit waits in vain\n"+
		"guarded writes: %d ran, %d refused, %d settled as not run, %d unknown; %d stale guard scripts run by the server\n"+
		"faults injected: %s",
		s.Schedules, s.Acquisitions, s.AcquireCalls, s.NotAcquired, s.Abandoned, s.Releases, s.Resets,
		s.Uncertain, s.Fences, s.KeepAliveLost, s.OutsiderWrites, s.AbandonedExpired, ms(s.ClosestGap), s.FairCalls, s.HandOvers,
		s.PrimCalls, s.Permits, s.Reads, s.Writes, s.WriterGaveUp, s.Crashed, s.PermitGaveUp,
		s.GuardedWrites, s.GuardRefusals, s.GuardNotWritten, s.GuardUnknown, s.StaleGuards, strings.Join(faults, ", "))
}

// Result is what one schedule did and what the checker found.
type Result struct {
	Seed       uint64
	Transport  string      // the processes' transport (Transport.Name)
	Target     string      // the real server, "" for a sim node
	Profile    sim.Profile // the sim node's profile ("" on a real server)
	Stats      Stats
	Violations []Violation
	Notes      []string // rules the target could not check, and why
	Timeline   []string // the faults applied and lifted, when the schedule failed
	Elapsed    time.Duration
}

// Failed reports whether the schedule broke a rule or could not run.
func (r Result) Failed() bool { return len(r.Violations) > 0 }

// Broken reports whether the schedule could not run at all (set-up or
// final read failed) and broke no rule of the lock.
func (r Result) Broken() bool {
	for _, v := range r.Violations {
		if v.Rule != RuleScheduleBroken {
			return false
		}
	}
	return len(r.Violations) > 0
}

// buildTags are the mutation build tags this binary was built with (see
// buildtag_*.go): a replay needs them too.
var buildTags []string

// Replay returns the command that runs this schedule again (with the build
// tags of a deliberately broken build, if this is one).
func (r Result) Replay() string {
	tags := ""
	if len(buildTags) > 0 {
		tags = " -tags " + strings.Join(buildTags, ",")
	}
	cmd := fmt.Sprintf("go run%s ./cmd/chaos -runs 1 -seed %d", tags, r.Seed)
	switch r.Transport {
	case "", Wire.Name:
	default: // the adapter module's campaign: rueidislease/, goredis/, valkeygo/
		dir := r.Transport
		if dir == "rueidis" {
			dir = "rueidislease"
		}
		cmd = fmt.Sprintf("cd %s && go run%s ./cmd/chaos -runs 1 -seed %d -transport %s", dir, tags, r.Seed, r.Transport)
	}
	if r.Target != "" {
		cmd += " -target " + r.Target
	}
	return cmd
}

// Run runs one schedule (see the package doc) and checks it. It returns
// once every goroutine it started has ended and every socket it opened is
// closed. A schedule that could not be set up reports a RuleScheduleBroken
// violation.
func Run(opt Options) Result {
	start := time.Now()
	p := newPlan(opt.Seed)
	if opt.Transport.Locks == nil {
		opt.Transport = Wire
	}
	res := Result{Seed: opt.Seed, Transport: opt.Transport.Name, Target: opt.Target}
	if opt.Target == "" {
		res.Profile = p.profile
	}
	s, err := setUp(opt, p)
	if err != nil {
		res.Violations = []Violation{{Rule: RuleScheduleBroken, Evidence: err.Error()}}
		res.Elapsed = time.Since(start)
		return res
	}
	obs := s.run()
	res.Stats = obs.stats
	res.Stats.Schedules = 1
	res.Violations, res.Notes, res.Stats.AbandonedExpired = check(obs)
	if !obs.real {
		_, res.Stats.StaleGuards = checkGuardAfterTakeover(obs)
	}
	if res.Failed() {
		res.Timeline = timelineOf(obs)
	}
	res.Stats.Fences = obs.fences
	res.Stats.ClosestGap, res.Stats.gapSeen = closestGap(obs)
	res.Elapsed = time.Since(start)
	return res
}
