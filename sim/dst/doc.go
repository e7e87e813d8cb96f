// Package dst is respire-go's deterministic simulator: it runs the driver
// production runs — actor.Driver, with its timer heap, renewal batches,
// fences, clean-ups, settling of uncertain acquisitions and push hub,
// stepping the real statemachine.Handle — in several simulated client
// processes, each with its own Driver over a simulated conn.Transport,
// against in-process simulated servers (sim.Engine), all on one goroutine.
//
// This package is part of respire-go's implementation: applications use
// the lease and coordination packages. Its API may change in any release,
// without notice; it carries no compatibility promise.
//
// # One seed, one schedule
//
// One seed → one PRNG → one virtual clock → one transcript. A seeded
// scheduler picks which pending event happens next among those that are
// due: a command arriving at a server, a reply or a push arriving at a
// client, a timer of a process's clock firing, a task resuming, a user
// decision or a user cancellation. Each connection stays FIFO; connections
// interleave freely. Each process reads its own monotonic clock running at
// 1±Options.DriftPPM (its actor.Clock, clock.go). Every goroutine the
// driver starts and every user call is a task (tasks.go, the process's
// actor.Spawn): a coroutine that runs on the scheduler's goroutine until it
// waits and is resumed by an event of its own, so which task runs next is
// the scheduler's choice too. Every random choice goes through a named
// shouldX predicate, so a schedule is a pure function of its Options: the
// same seed gives a byte-identical transcript. Swarm derives varied
// Options (which faults, how often, which server profile, push on or off,
// a command timeout or none) from the seed alone.
//
// # The workload
//
// Each process's user makes random calls of the driver's API, each a task
// with a ctx the user may cancel from a later decision: Driver.Acquire
// (with and without a wait, with a keep-alive, fenced), Lock.ResetExpiry,
// Lock.StartKeepAlive (its ctx ended later, or KeepAlive.Stop), a release
// (Lock.Request with InputRelease), Lock.StopAndRelease (bounded as
// lease.Lock.Close is), Lock.Verify and Lock.Context. With
// Options.Primitives (one Swarm seed in two) they also take, with the same
// calls, permits of a lease semaphore and read and write holds of a
// read/write lock (prims.go: actor.AcquireSpec's Kind, WireKey and Limit,
// as lease.Semaphore and lease.RWLock build them), whose scripts the
// sessions run (scripts.go: EVALSHA, EVAL after NOSCRIPT, holders'
// renewals in the renewal batches); their keys never move slots, a
// failover keeps the whole keyspace (sim.Engine.Failover), and a process
// may crash for good (Options.CrashPercent). With push on, the watchers
// track sorted-set members too (WatchScoreMany: CLIENT CACHING YES +
// ZSCORE), so waiting permits and readers and keep-alive holders of them
// are woken by the sets' changes, as over conn.Pool. With Options.Guarded
// (one Swarm seed in two) the holders of mutex keys, fenced or not, also
// make guarded writes (guard.go: Lock.Guard of an INCR of "{key}:data",
// conn's guard script, its write-id record and fence record in the key's
// slot, copied by failovers and slot moves, under the cluster's multi-key
// rules during a migration).
//
// # Transport
//
// The simulated transport (transport.go, session.go, exchange.go, ops.go,
// fence.go, watch.go) does what conn.Pool does over rueidis, with conn's
// pure protocol (conn.Op.Machine: the SET IFEQ → EVALSHA → EVAL and DELEX
// → DELIFEQ → EVALSHA → EVAL ladders, the fenced script), capability
// memory per session, the identity handshake (CLIENT ID and CLIENT INFO),
// redirects (MOVED corrects the process's slot map, ASK sends ASKING),
// shared fences (CLIENT KILL ID … ADDR … on a control connection) and, with
// push on, a tracking watcher per node (HELLO 3, CLIENT TRACKING ON OPTIN
// NOLOOP, CLIENT CACHING YES + GET; the engine's invalidations travel back
// on it in order, and its end tells the driver that everything tracked
// there is forgotten). Its errors are *conn.Error values classified as conn
// classifies them: nothing written when the ctx ended first, the session
// was retired or found dead first (NoticeDeadPercent), or the route aborted
// (not submitted); a caller that gives up after the write gets an
// uncertain error and the session goes on; a connection lost under a
// command is classified by conn.ClassifyTransport. Connections behave as
// rueidis' sockets do on real sockets: one the process closes itself while
// commands are in flight (a retired session) answers them with
// rueidis.ErrClosing once its drain gives up, while the server still runs
// what it already read; one the server closes is noticed late — writes
// into it vanish and end with io.EOF.
//
// # Faults
//
// Connection loss before or after the server runs a command, replies late
// beyond the command timeout, node pauses, failover to a server of another
// profile (capabilities change, scripts flushed, connections dropped), one
// cluster slot owner change per schedule to a new node of another profile
// (either at once, the old owner then answering MOVED, or as a migration:
// ASK for keys the source no longer has, the target accepting them only
// right after ASKING, then MOVED), ACL changes denying CLIENT, DELEX, DELIFEQ
// or EVALSHA, cancellation at every point where a call can be cancelled,
// writes delayed while waiting for in-flight capacity, GC-style process
// pauses longer than the lease, a process closing one of its busy sessions,
// an outsider killing every client of a node, invalidations lost or delayed
// on a live watcher, and an outsider overwriting a held key.
//
// # Fencing-token locks
//
// Options.FencedPercent of the acquisitions are fenced (coordination/'s
// locks: actor.AcquireSpec.Fenced), with conn's fenced script on the key and
// its persistent counter "{key}:fence". Failover copies the counters with
// the keyspace and a slot move carries the counter with its slot; during a
// migration the two-key script follows the cluster's multi-key rules (run
// where both keys are, ASK when neither is on the source, TRYAGAIN when
// they are split).
//
// # Invariants
//
// Checked after every event (checker.go, beliefs.go), on the driver's own
// state (Lock.LeaseDeadline, its keep-alive's and its context's end) and on
// what the transport records per operation (mapped to handles by owner
// token): (1) a handle that believes it holds a key, less the drift bound,
// is the server's owner (unless an outsider overwrote it); (2) a command of
// a token that is not the owner never extends, deletes or creates the key;
// (3) no uncertain write is replayed, a fallback follows only the exact
// confirming reply, no write of a token goes out while an earlier write of
// it that the driver was told is uncertain may still run (its connection
// neither fenced nor closed by the server) — except the lock's other
// command in flight, a release or a renewal the core dispatched before it
// was told, which the core lets go on while it fences the uncertain one
// (compared with the token, neither can make anyone an owner) —, and an
// operation ends "not submitted" only when its last written command was
// answered; (4) a live
// keep-alive or lock context ends before the server-side lease can have
// expired (the lock's context by its Done, closed by the driver's timer:
// its exact Err is not asked); (5) a fenced connection runs nothing after its CLIENT KILL
// reply; (6) per fencing counter, the tokens the driver returns increase
// strictly in the order the server handed them out (no rollback is
// modelled); (7) in fault-free liveness schedules every waiting acquirer
// acquires within its budget; (8) a token never holds its key after a
// release of it (an abandoned acquisition's clean-up included), sent where
// no SET of the token could run after it, answered; (9) in push probes
// (push on, outsiders' overwrites, nothing delaying), a keep-alive holder
// whose key an outsider overwrote stops believing it holds it within a
// bound; (10)-(13), for the primitives (primcheck.go): never more permits
// believed live than the limit, nor live on the server; never a write
// hold believed live with a read or another write hold, nor a writer with
// a live reader on the server; in fault-free liveness schedules every
// waiting writer gets in within its budget while readers churn, and no
// reader is admitted while a writer waits with its marker set; a permit
// is refused only while limit permits are live on the server (an ended
// lease frees its permit at its lease end); (14) a guarded write's script
// writes only while its token holds the key on the server that runs it —
// no guarded write lands after another owner (or an outsider) took the
// key, or after its lease ended. Invariants 1, 4 and 8 judge
// permits and read holds by their members. A panic of the driver or the
// runtime is invariant 0. A failing run
// reports its seed and the command that replays it (Result.Replay).
//
// Mutations break the simulated transport on purpose (Options.Mutation) to
// prove the checker catches them; the driver's own mutation is a build tag
// of package actor (respire_mutation_renewal: the renewer ignores its
// renewal's answer), which the simulator catches within 1,000 schedules
// (make dst-mutation; at seed 5) and the real-socket chaos campaign too
// (make chaos-mutation); conn's guard mutation (respire_mutation_guard: the
// guard scripts skip their ownership check) is caught by invariant 14 (at
// seed 103; make dst-mutation). A binary built with a mutation tag names it
// in its replay commands.
//
// Nothing in this package is safe for concurrent use: a run belongs to one
// goroutine. Independent runs may go in parallel (cmd/simcampaign does).
package dst
