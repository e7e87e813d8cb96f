// Package dst is respire-go's deterministic simulation runtime: it runs the
// real lock-handle core (statemachine.Handle, with statemachine.Poll for
// waiting acquisitions) and conn's pure protocol (conn.Operation: the
// SET IFEQ → EVALSHA → EVAL and DELEX → DELIFEQ → EVALSHA → EVAL ladders,
// capability memory in capstore, redirects) for several simulated client
// processes against in-process simulated servers (sim.Engine), all in one
// goroutine.
//
// This package is part of respire-go's implementation: applications use
// the lease and coordination packages. Its API may change in any release,
// without notice; it carries no compatibility promise.
//
// # One seed, one schedule
//
// One seed → one PRNG → one virtual clock → one transcript. A seeded
// scheduler picks which pending event happens next among those that are
// due: a command arriving at a server, a reply arriving at a client, a
// timer firing, a user call (acquire with or without waiting, reset,
// keep-alive start/stop, release, close, verify) or a user cancellation.
// Each connection stays FIFO; connections interleave freely. Each process
// reads its own monotonic clock running at 1±Options.DriftPPM. Every random
// choice goes through a named shouldX predicate of the runtime, so a schedule
// is a pure function of its Options: the same seed gives a byte-identical
// transcript. Swarm derives varied Options (which faults, how often, which
// server profile) from the seed alone.
//
// # Transport
//
// Connections behave as rueidis' sockets do (as verified over real
// sockets): a connection the process closes itself
// while commands are in flight (a retired session, a process closing it as
// another lock's fence or Locks.Close would) answers those commands with
// rueidis.ErrClosing once its drain gives up, while the server still runs
// what it already read; a connection the server closes is noticed late —
// writes into it vanish and end with io.EOF — unless the process finds it
// dead first (conn's idle PING or death watch, NoticeDeadPercent). Every
// transport error is classified by conn.ClassifyTransport, so the
// invariants judge production's classification.
//
// # Faults
//
// Connection loss before or after the server runs a command, replies late
// beyond the command deadline, node pauses, failover to a server of another
// profile (capabilities change, scripts flushed, connections dropped), one
// cluster slot owner change per schedule to a new node of another profile
// (either at once, the old owner then answering MOVED, or as a migration:
// ASK for keys the source no longer has, the target accepting them only
// right after ASKING, then MOVED), ACL changes denying CLIENT, DELEX, DELIFEQ or EVALSHA,
// cancellation at every point where a call can be cancelled (before the
// write, while waiting for the session handshake, after the write, while
// polling), writes delayed while waiting for in-flight capacity, GC-style
// process pauses longer than the lease, a process closing one of its busy
// sessions, and an outsider killing every client of a node.
//
// # Fencing-token locks
//
// Options.FencedPercent of the handles are fencing-token locks
// (coordination/; Swarm turns them on in one seed in four):
// they acquire with conn's fenced script (conn.FencedAcquire, EVALSHA then
// EVAL after NOSCRIPT) on the key and its persistent counter "{key}:fence",
// and renew, verify and release with the ordinary ladders, as coordination's
// locks do (they are lease's managed handles, acquired with that script).
// Failover copies the counters with the keyspace and a slot move carries
// the counter with its slot; during a migration the two-key script follows
// the cluster's multi-key rules (run where both keys are, ASK when neither
// is on the source, TRYAGAIN when they are split). The core takes the
// script's reply as an acquisition, exactly as for SET NX, as production
// does.
//
// # Invariants
//
// Checked after every event (see checker.go): (1) a handle that believes it
// holds a key, less the drift bound, is the server's owner; (2) a command of
// a handle that is not the owner never extends, deletes or creates the key;
// (3) no uncertain write is replayed, a fallback follows only the exact
// confirming reply, and no new write of a handle goes out while an earlier
// uncertain write of it may still run (its connection neither fenced nor
// closed by the server); (4) a live keep-alive context is cancelled before the
// server-side lease can have expired; (5) a fenced connection runs nothing
// after its CLIENT KILL reply; (6) per fencing counter, the tokens processes
// accept (replies received and parsed as an acquisition) increase strictly
// in the order the server handed them out; there is no modelled rollback
// (failover loses no increment), so nothing is exempt; (7) in fault-free
// liveness schedules every waiting acquirer acquires within its budget; (8)
// the token of an abandoned acquisition never holds its key after the
// clean-up delete, sent where the SET cannot run after it, answered. A
// panic of the core or the runtime is reported as invariant 0. A failing
// run reports its seed and the command that replays it (ReplayCommand).
//
// Nothing in this package is safe for concurrent use: a run belongs to one
// goroutine. Independent runs may go in parallel (cmd/simcampaign does).
package dst
