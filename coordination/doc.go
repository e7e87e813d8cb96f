// Package coordination provides fencing-token locks: managed leases that
// carry an ordered token a protected resource can check.
//
// A fenced lock uses two keys that every contender must share and that are
// reserved for this primitive:
//
//   - the lease key, which expires like any lease/ lock and holds the
//     random owner token;
//   - the counter key, which is persistent: each successful acquisition
//     increments it in the same atomic Lua step that takes the lease, and
//     the new value is the lock's fencing token (a positive int64).
//
// Ordinary lock ownership alone does not enforce fencing at an external
// resource: a holder paused past its lease (GC, swap, a slow network) still
// believes it holds the lock when it writes. The fencing token closes that
// gap only if the protected resource checks it: with every write, atomically,
// the resource must accept the write only when token >= the last token it
// accepted (and token > 0), and remember the largest accepted token. Equal
// tokens let one owner write repeatedly within its lease; a stale owner's
// smaller token is rejected.
//
// For data kept in Redis the check needs no code of yours: a Lock's guarded
// writes (Lock.Guard, lease's, promoted) run only while its lease key holds
// its owner token and no larger fencing token wrote through its counter (the
// fence record, the counter key followed by ":guarded", persistent like the
// counter); the script records this lock's token there. A refused holder
// writes nothing and its lock ends (lease.LossGuardRefused,
// lease.LossFenceRefused).
//
// # The same lock as package lease's
//
// A *Lock embeds the managed *lease.Lock that the acquisition created:
// the same state machine, keep-alive and context. Acquire with
// lease.WithKeepAlive (or call KeepAlive) to have it renewed in the
// background, and run the protected work under Lock.Context, which ends,
// with the cause, when the lease ends for any reason (released, expired,
// lost). A renewal or release whose outcome is unknown gives ownership up
// (or, for a keep-alive renewal, is recovered on a fresh connection) after
// its connection was fenced with CLIENT KILL, so it cannot run later;
// concurrent Release calls share one delete. The options are lease's
// (lease.WithKeepAlive, lease.WithWait, lease.WithWaitUntilDone,
// lease.WithRetryEvery) plus WithReplicas, and so are the errors (see
// Coordinator.TryAcquire). Managed renewal needs the CLIENT ID and CLIENT
// KILL permissions, as for lease's locks (see lease.PermissionError and
// lease.WithUnfencedRenewal), and the acquisition script adds +evalsha
// +eval +pttl +incr to the server's least-privilege ACL line
// (docs/compatibility.md).
//
// # Limitations (read before relying on the tokens)
//
// docs/fencing.md in the repository states what a token guarantees, every
// way the counter can go back, what WithReplicas changes and what the
// protected resource must do. In short: tokens increase only within one
// retained Redis history. They are not globally monotonic and this is not a
// consensus-backed fencing service:
//
//   - The counter must never be deleted, reset, given a TTL or evicted. Run
//     the deployment with a no-eviction policy (maxmemory-policy noeviction)
//     or make sure the counter can never be chosen for eviction. The script
//     refuses a counter that has a TTL or is not a canonical non-negative
//     integer, but it cannot detect a counter that was deleted: it starts
//     again from 1.
//   - Failover with asynchronous replication can lose the latest increments:
//     the promoted replica hands out tokens that were already handed out.
//     WithReplicas narrows this: the token is handed out only once WAIT
//     reports that n replicas acknowledged the increment; otherwise the
//     lease is released and the acquisition fails with ErrNotReplicated
//     (the counter stays incremented). A failover to a replica that was not
//     among the n, or a restart that loses memory, still rolls it back.
//   - Restoring a backup rolls the counter back in the same way.
//   - Gaps are normal: a cancelled acquisition whose script took the lease,
//     a reply that came too late, or one refused by WithReplicas spends a
//     token (a contended one does not), and an acquisition whose reply was
//     lost is never replayed (its token is spent and its lease, if created,
//     is deleted in the background or lives until it expires).
//   - VerifyStillHeld is a point-in-time check only; use the fencing token
//     at the resource, not VerifyStillHeld, to protect writes.
//
// # Keys, prefixes and cluster mode
//
// Both keys get the Locks view's key prefix. In cluster mode both prefixed
// keys must hash to the same slot: use a shared hash tag such as
// "{invoice:42}:lease" with "{invoice:42}:fence". A cross-slot pair is
// refused before anything is sent (an error matching lease.ErrCrossSlot and
// lease.ErrNotSubmitted).
//
// # Wire behaviour
//
// Acquisition runs conn.FencedAcquireScript with EVALSHA (EVAL only after
// the definite NOSCRIPT reply) on the lease key's session, the pinned
// connection of lease's managed locks, which then carries the lock's
// renewals and release: a clean-up delete of an abandoned acquisition
// queues behind the script on that socket. An uncertain outcome is never
// replayed. With WithReplicas the script runs on a dedicated connection
// instead, pipelined with WAIT n timeout (conn.AcquireFencedReplicated):
// WAIT waits for the replication offset the server recorded for the
// connection it is sent on, so it must follow the script on the script's
// own connection. WAITAOF is not used (see docs/fencing.md). Renewal,
// ownership checks and release are lease's, with the native commands and
// fallbacks of each server.
//
// Waiting acquisition waits as lease.Locks.Acquire with lease.WithWait does
// (it is the same driver): a fresh owner token per try; with push (the
// default where the server allows it) a waiter parks on the lease key,
// tracked on the node's watcher connection, and tries again as soon as the
// key is deleted, expires or changes hands, with a try about once a second
// as the safety net (every RetryEvery when lease.WithRetryEvery is given);
// without push (lease.WithoutPush, or a server that refuses tracking) it
// polls about every RetryEvery.
//
// Durations are rounded up to whole milliseconds, as for lease/ locks (the
// original truncates and refuses less than 1 ms); a lease no longer than
// its drift margin is refused before anything is sent (lease.ErrInvalidTTL).
package coordination
