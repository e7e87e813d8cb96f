// Package dst is respire-go's deterministic simulator: it runs the code
// production runs — actor.Driver, with its timer heap, renewal batches,
// fences, clean-ups, settling of uncertain acquisitions and push hub,
// stepping the real statemachine.Handle, over the wire engine
// conn.Engine — in several simulated client processes, each over a
// simulated client library whose connections reach in-process simulated
// servers (sim.Engine) through a seeded network, all on one goroutine. It
// simulates connections and time, nothing else.
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
// 1±Options.DriftPPM (its actor.Clock, clock.go), which the driver and the
// engine share. Every goroutine the driver or the engine starts and every
// user call is a task (tasks.go, the process's actor.Spawn): a coroutine that runs on the scheduler's goroutine until it
// waits and is resumed by an event of its own, so which task runs next is
// the scheduler's choice too. Every random choice goes through a named
// shouldX predicate, so a schedule is a pure function of its Options: the
// same seed gives a byte-identical transcript. Swarm derives varied
// Options (which faults, how often, which server profile, push on or off,
// a command timeout or none, which kind of client) from the seed alone.
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
// engine's sessions run (EVALSHA, EVAL after NOSCRIPT, holders' renewals
// in the renewal batches); their keys never move slots, a
// failover keeps the whole keyspace (sim.Engine.Failover), and a process
// may crash for good (Options.CrashPercent). With push on, the watchers
// track sorted-set members too (WatchScoreMany: CLIENT CACHING YES +
// ZSCORE), so waiting permits and readers and keep-alive holders of them
// are woken by the sets' changes. With Options.Guarded (one Swarm seed in
// two) the holders of mutex keys, fenced or not, also make guarded writes
// (guard.go: Lock.Guard of an INCR of "{key}:data", conn's guard script,
// its write-id record and fence record in the key's slot, copied by
// failovers and slot moves, under the cluster's multi-key rules during a
// migration).
//
// # Connections and time: the only simulated parts
//
// Each process runs what production runs: the driver (actor.Driver) over
// the wire engine (conn.Engine: sessions shared by many locks, the
// identity handshake, capability memory, fences on a per-node fence
// connection, MOVED/ASK and READONLY, liveness PINGs, push watchers,
// classification), each with the process's Clock and Spawn. Under the
// engine sits a simulated client library, a conn.Client (simclient.go),
// as FoundationDB's Sim2Conn sits under the real FlowTransport and
// TigerBeetle's message bus under the real replica: Dial opens a
// simulated connection to a node (a round trip: HELLO 3), Conn.Do writes a
// pipeline onto the seeded network and reads its replies in order,
// Listen opens a connection that hands the node's invalidations to the
// engine, Mode and Nodes tell the topology a client knows (standalone, or
// cluster when the schedule moves a slot: every node answers CLUSTER SLOTS
// from the schedule's slot map, cluster.go), Closed says whether the user
// closed it. Swarm draws the client's kind: pipelined connections and
// listeners that carry the tracked reads (rueidis', valkey-go's), or
// connections that take one pipeline at a time — the engine's drainer
// then batches its callers — with listen-only listeners the engine
// REDIRECTs tracking to (go-redis'), or pipelined ones with listen-only
// listeners (Options.Unpipelined, Options.ListenRedirect); and, apart,
// whether pipelined connections write each caller's commands as they
// come (conn.PerCallerWriter, as rueidis' and valkey-go's do: the engine
// drains their sessions too) or take them from each caller's own
// goroutine (the root module's own client; Options.PerCallerWriter).
//
// The simulated connection (simconn.go, network.go) behaves as a client's
// socket does on real sockets: conn.ErrNotWritten only when nothing was
// written (the ctx ended first, the client closed it, it was known dead,
// a write waiting for in-flight capacity gave up); a connection the server
// closed is noticed late — writes into it vanish and end in io.EOF — or
// found dead before the write (Options.NoticeDeadPercent); one the client
// closes while commands are in flight (the engine retiring a session after
// a fence or a redirect, Transport.RetireAll) still has them run by the
// server and answers them with errClosedLocally once its drain gives up;
// a caller that stops waiting leaves its commands to their fate. No
// session, fence, redirect, watcher or classification code lives here.
//
// The checker still judges every operation: the engine reports when it
// starts and ends each one (conn.Observer.Op) and which command it hands
// to which connection for it (conn.Observer.Command), and every command a
// simulated connection writes is attributed to its operation
// (attribute.go).

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
// pauses longer than the lease, a process's engine retiring its sessions
// (Transport.RetireAll, as Locks.Close does: busy connections closed by the
// engine itself), an outsider killing every client of a node, processes
// crashing for good, invalidations lost or delayed on a live listener, and
// an outsider overwriting a held key. Each is a fault of connections,
// servers or time; none touches the engine or the driver.
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
// the wire, per operation of the engine (attribute.go; mapped to handles by
// owner token): (1) a handle that believes it holds a key, less the drift bound,
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
// answered, and no lock write belongs to no operation; (4) a live
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
// key, or after its lease ended; (15) a fair waiter is granted the lock
// only when no waiter with an earlier ticket waits with a live waiter
// lease; (16) no wake-up is lost: a free key whose queued waiter renews its
// place is granted within a hand-off (faircheck.go). Invariants 1, 4 and 8 judge
// permits and read holds by their members. A panic of the driver or the
// runtime is invariant 0, and so is the engine calling Do on a
// non-pipelined connection, or on a per-caller writer's session (which the
// engine drains), while another Do is in progress. A failing run
// reports its seed and the command that replays it (Result.Replay).
//
// Mutations break the simulated client library or the wire on purpose
// (Options.Mutation, mutations.go: a client that makes up a confirming
// reply, answers a fence itself, claims a command in flight on a socket it
// closed was never written, hands out a stale fencing token; commands
// rewritten on their way) to prove the checker catches them under the
// shipped engine and driver. The shipped code's own mutations are build
// tags: the engine's (respire_mutation_errclosing, package conn: an error
// of a connection the engine closed itself taken as not submitted), the
// driver's (respire_mutation_renewal, package actor: the renewer ignores
// its renewal's answer), the semaphore's (respire_mutation_semlimit) and
// the guard scripts' (respire_mutation_guard: they skip their ownership
// check; caught by invariant 14) and the fair queue's
// (respire_mutation_fairhead: it grants behind the head; caught by
// invariant 15); the simulator catches each within 1,000
// schedules (make dst-mutation)
// and the real-socket chaos campaign too (make chaos-mutation). A binary
// built with a mutation tag names it in its replay commands.
//
// Nothing in this package is safe for concurrent use: a run belongs to one
// goroutine. Independent runs may go in parallel (cmd/simcampaign does).
package dst
