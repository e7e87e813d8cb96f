package dst

// Stats counts what happened in schedules, to show what a campaign
// exercised. Add merges counts.
type Stats struct {
	Commands      int // commands the servers ran
	Fallbacks     int // fallback commands sent after a confirming reply
	Redirects     int // MOVED/ASK followed
	Acquired      int // acquisition calls answered "acquired"
	Released      int // releases answered Released
	Uncertain     int // operations that ended uncertain
	NotSubmitted  int // operations that ended not submitted
	Fences        int // CLIENT KILL fences answered
	Cancellations int // user cancellations
	Failovers     int // node failovers
	SlotMoves     int // slot moves and migrations
	ACLDenials    int // ACL changes
	NodePauses    int // node pauses
	ProcessPauses int // process pauses
	FencingTokens int // fencing tokens handed out by the fenced script
	LocalCloses   int // sessions a process closed itself
	ClientKills   int // outsiders' CLIENT KILL TYPE normal
	ClientCloses  int // processes whose user closed their Redis client
	Recoveries    int // handles that left Recovering for Held
	Pushes        int // invalidations that reached a watcher
	PushesLost    int // invalidations lost on a live watcher (a fault)
	Overwrites    int // outsiders' overwrites of a held key
	// What the driver did (package actor, the driver production runs):
	RenewalBatches int // batches of keep-alive renewals its renewers sent (Session.ExtendMany), by the observer
	Settled        int // uncertain acquisitions it settled (fence, read) for a waiting caller
	Cleanups       int // clean-ups of abandoned acquisitions it started
	HolderReads    int // its push hub's owner-compared reads for keep-alive holders
	Refuted        int // holders its push hub ended after such a read
	HandOvers      int // waiters whose try a release of their process carried (Options.Crowd)
	CrowdAcquired  int // acquisitions by the crowd (Options.Crowd)
	// The primitives workload (Options.Primitives):
	PrimitiveSchedules int // schedules with a semaphore and a read/write lock
	PermitSchedules    int // ... in which a permit was acquired
	RWSchedules        int // ... in which a read or write hold was acquired
	Permits            int // permits acquired
	Reads, Writes      int // read and write holds acquired
	WriterWaits        int // write acquisitions answered "waiting" (marker set)
	FullRefusals       int // permit acquisitions refused: the semaphore was full
	Crashes            int // processes crashed for good
	MemberWatchReads   int // sorted-set reads on watchers (WatchScoreMany: push for permits and readers)
	// The guarded writes (Options.Guarded):
	GuardedSchedules int // schedules with guarded writes
	GuardedWrites    int // guarded writes that ran (Guard returned nil)
	GuardRefusals    int // guarded writes refused (the key, or the fence record, not ours)
	GuardNotWritten  int // guarded writes whose reply was lost, settled as never run
	GuardUnknown     int // guarded writes whose reply was lost and that settling could not tell
	StaleGuards      int // guard scripts a server ran while the key was not the writer's (refused unless broken)
	// Fair waiting (Options.FairPercent, faircheck.go):
	FairWaits  int // acquisitions that queued fairly
	FairQueued int // fair scripts answered "queued"
	FairGrants int // fair waiters the lock was granted to (each judged by invariant 15)
	// The engine's session drainer on a per-caller writer
	// (Options.PerCallerWriter, rueidis' and valkey-go's kind; drainstats.go):
	PerCallerSchedules int // schedules whose pipelined sessions the engine drained
	PerCallerQueued    int // lock commands handed to such a session while a round trip was on its wire
	PerCallerBatches   int // pipelines its drainer wrote with commands that had queued
	PerCallerShared    int // ... carrying the commands of two operations or more
	PerCallerUncertain int // round trips that ended without every reply with commands queued behind them
	PerCallerFenced    int // fences answered with a drained batch on the wire or commands queued behind a round trip
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.Commands += o.Commands
	s.Fallbacks += o.Fallbacks
	s.Redirects += o.Redirects
	s.Acquired += o.Acquired
	s.Released += o.Released
	s.Uncertain += o.Uncertain
	s.NotSubmitted += o.NotSubmitted
	s.Fences += o.Fences
	s.Cancellations += o.Cancellations
	s.Failovers += o.Failovers
	s.SlotMoves += o.SlotMoves
	s.ACLDenials += o.ACLDenials
	s.NodePauses += o.NodePauses
	s.ProcessPauses += o.ProcessPauses
	s.FencingTokens += o.FencingTokens
	s.LocalCloses += o.LocalCloses
	s.ClientKills += o.ClientKills
	s.ClientCloses += o.ClientCloses
	s.Recoveries += o.Recoveries
	s.Pushes += o.Pushes
	s.PushesLost += o.PushesLost
	s.Overwrites += o.Overwrites
	s.RenewalBatches += o.RenewalBatches
	s.Settled += o.Settled
	s.Cleanups += o.Cleanups
	s.HolderReads += o.HolderReads
	s.Refuted += o.Refuted
	s.HandOvers += o.HandOvers
	s.CrowdAcquired += o.CrowdAcquired
	s.PrimitiveSchedules += o.PrimitiveSchedules
	s.PermitSchedules += o.PermitSchedules
	s.RWSchedules += o.RWSchedules
	s.Permits += o.Permits
	s.Reads += o.Reads
	s.Writes += o.Writes
	s.WriterWaits += o.WriterWaits
	s.FullRefusals += o.FullRefusals
	s.Crashes += o.Crashes
	s.MemberWatchReads += o.MemberWatchReads
	s.GuardedSchedules += o.GuardedSchedules
	s.GuardedWrites += o.GuardedWrites
	s.GuardRefusals += o.GuardRefusals
	s.GuardNotWritten += o.GuardNotWritten
	s.GuardUnknown += o.GuardUnknown
	s.StaleGuards += o.StaleGuards
	s.FairWaits += o.FairWaits
	s.FairQueued += o.FairQueued
	s.FairGrants += o.FairGrants
	s.PerCallerSchedules += o.PerCallerSchedules
	s.PerCallerQueued += o.PerCallerQueued
	s.PerCallerBatches += o.PerCallerBatches
	s.PerCallerShared += o.PerCallerShared
	s.PerCallerUncertain += o.PerCallerUncertain
	s.PerCallerFenced += o.PerCallerFenced
}
