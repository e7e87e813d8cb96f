// Package sim is a Redis-protocol server written for respire-go's tests, demo
// and deterministic simulation. It reproduces, byte for byte, the replies of
// Redis 7.0, Redis 8.4, Valkey 8.1 and Valkey 9.0 to the commands the lock
// library uses (see docs/compatibility.md), with a virtual or real clock,
// ACL users, cluster mode and scriptable faults.
//
// Three ways to use it:
//   - in tests: Start returns a running *Server (Addr, Exec, Log, WaitFor,
//     Inject, Pause, KillClient, Failover, SetUser); Inject's faults act on
//     commands and, with DropPush and DelayPush, on the invalidations the
//     node sends. StartCluster returns a *Cluster of masters sharing a slot
//     map (MoveSlot, StartMigration, FinishMigration answer MOVED/ASK like
//     real nodes);
//   - as a binary: go run ./cmd/respire-sim --profile valkey-9.0 --listen 127.0.0.1:7000;
//   - in process without sockets: NewEngine, then NewClient/Exec/Killed/
//     CloseClient drive one node deterministically (no goroutines; time
//     only from Config.Clock); TakePushes/PushTargets hand out what the
//     node sends besides replies, ExpireDue runs its active expiry.
//
// Client-side tracking works as on the real servers (as recorded from them;
// the four profiles behave alike, NOPERM texts aside): CLIENT TRACKING
// ON|OFF with REDIRECT, BCAST, PREFIX, OPTIN, OPTOUT and NOLOOP, CLIENT
// CACHING, TRACKINGINFO and GETREDIR, with the real error replies. A key a
// tracking connection read is invalidated once by any change: SET (IFEQ,
// NX that wrote), DEL, DELEX, DELIFEQ, INCR, RPUSH, a script's writes,
// PEXPIRE (even with the value unchanged), FLUSHALL/FLUSHDB (a null key
// list) and expiry, lazy (a command finds the key expired) or active
// (Engine.ExpireDue; a Server runs it every Config.ExpireEvery). RESP3
// connections get ">2 invalidate" pushes; RESP2 ones only through REDIRECT
// to a connection subscribed to __redis__:invalidate (SUBSCRIBE,
// UNSUBSCRIBE and PUBLISH exist for that, on exact channel names). A
// connection's own invalidations follow its reply; those caused by others
// are written by a Server between replies, never inside one.
//
// Sorted sets and TIME exist for the semaphore and read/write-lock scripts:
// ZADD (NX, XX, GT, LT, CH, INCR), ZREM, ZREMRANGEBYSCORE, ZCARD, ZSCORE (a
// RESP3 double) and ZCOUNT, with WRONGTYPE against strings and lists,
// expiry and tracking invalidations like every other key. TIME reads the
// clock; while a script runs, keys expire by the script's start time, as
// on a real server (a key live when the script started stays live to its
// end, however long it runs, and however late a TIME inside it reads).
//
// Known gaps: keyspace notifications, pattern and shard pub/sub, ACL
// channel rules, the tracking table size limit; non-integer sorted-set
// scores are printed as Redis 7.0 prints them (%.17g) on every profile;
// BLPOP, ZRANGE and other commands the lock does not use are unknown
// commands.
//
// CONTRACT FILE: the exported names below are relied on by conn/, lease/ and
// their tests. Implementations live in other files of this package.
package sim

import (
	"time"
)

// Profile names a server version whose replies the simulator reproduces.
type Profile string

// The supported profiles.
const (
	Redis70  Profile = "redis-7.0"  // Debian redis-server 7.0.15
	Redis84  Profile = "redis-8.4"  // Redis 8.4 (DELEX, SET IFEQ)
	Valkey81 Profile = "valkey-8.1" // Valkey 8.1.7 (SET IFEQ)
	Valkey90 Profile = "valkey-9.0" // Valkey 9.0.4 (SET IFEQ, DELIFEQ)
)

// Profiles lists every supported profile, oldest first.
var Profiles = []Profile{Redis70, Redis84, Valkey81, Valkey90}

// Clock is the server's time source; keys expire on it.
type Clock interface {
	Now() time.Time
}

// Config configures one simulated node. The zero value is a redis-7.0
// node on a free loopback port, real time, no password.
type Config struct {
	Profile  Profile // default Redis70
	Addr     string  // listen address; default "127.0.0.1:0"
	Password string  // password of the "default" user; "" means no AUTH needed
	Clock    Clock   // nil means real time (time.Now)
	// History keeps every command a client's connection executed, with its
	// reply (see Engine.History); off by default, as it grows without bound.
	History bool
	// ExpireEvery is how often a Server runs Engine.ExpireDue (active
	// expiry, sending the invalidations of keys that expire unread, and
	// BCAST invalidations): 0 means every 10 ms of real time, a negative
	// value never (the test calls Engine.ExpireDue itself; keys then expire
	// only when a command finds them expired). NewEngine ignores it.
	ExpireEvery time.Duration
}

// Execution is one command a client's connection executed (History): unlike
// the log, which records arrivals, it holds only what ran, in the order it
// ran, with the reply. Commands inside scripts are part of their script.
type Execution struct {
	Seq      int64     // order of execution on this node, from 1
	ClientID int64     // CLIENT ID of the connection that ran it
	Addr     string    // that connection's address as CLIENT INFO reports it
	Args     []string  // the command and its arguments
	Reply    string    // the reply bytes in the connection's protocol
	At       time.Time // the node's clock when it ran
}

// Entry is one command in a node's command log (like MONITOR).
type Entry struct {
	Seq      int64    // order of arrival on this node, from 1
	ClientID int64    // CLIENT ID of the connection that sent it
	Args     []string // the command and its arguments, as sent
}

// FaultKind selects what an injected fault does to a matching command.
type FaultKind int

// The fault kinds.
const (
	// DelayReply executes the command and writes its reply after Delay of
	// real time, or, when Gate is set, once Gate is closed.
	DelayReply FaultKind = iota + 1
	// DropBeforeExec closes the connection without executing the command.
	DropBeforeExec
	// DropAfterExec executes the command, then closes the connection
	// without writing the reply.
	DropAfterExec
	// FailWith replies with Error instead of executing the command.
	FailWith
	// ReplaceReply executes the command, then writes Reply instead of its
	// reply (a server that answers what no real one would, for a client's
	// protocol checks).
	ReplaceReply
	// DropPush discards a tracking invalidation instead of sending it: a
	// RESP3 ">2 invalidate" push, or a "__redis__:invalidate" message to a
	// RESP2 connection REDIRECTed to. The change and the server's tracking
	// table are as without the fault (the key is forgotten, as once sent):
	// the client never hears of it.
	DropPush
	// DelayPush holds a tracking invalidation (as DropPush selects it) for
	// Delay of real time, or, when Gate is set, until Gate is closed, then
	// sends it. Everything else queued for the same connection besides
	// replies (later invalidations, pub/sub messages) waits behind it, so
	// those keep their order; replies are not held and overtake it, as if
	// the invalidations travelled a slower path. A connection that closes
	// meanwhile loses them; Close discards them.
	DelayPush
)

// Fault is a scripted failure for commands that match it, or, for
// DropPush and DelayPush, for the tracking invalidations that match it. A
// fault fires for Times matching commands or invalidations (0 means once)
// and is then removed.
//
// A push fault sees an invalidation as args ["invalidate", key...] (a
// flush's, which names no key, as ["invalidate"]); ClientID is the
// connection it is written to (with REDIRECT, the redirect target), Key
// selects invalidations naming that key (a flush's matches every Key),
// Command is ignored. Its Match runs while the node's engine is locked: it
// must not call the Server. Faults are a Server's: an in-process Engine
// hands its messages out by TakePushes, and its user drops or delays them.
type Fault struct {
	Kind     FaultKind
	Command  string                   // command name, case-insensitive ("DELEX", "CLIENT"); "" matches any
	Match    func(args []string) bool // optional extra predicate on the whole command (or invalidation)
	ClientID int64                    // only this client, when non-zero
	Key      string                   // DropPush, DelayPush: only invalidations of this key, when non-empty
	Times    int
	Delay    time.Duration   // DelayReply, DelayPush
	Gate     <-chan struct{} // DelayReply, DelayPush: hold the reply (invalidation) until closed
	Error    string          // FailWith: error text without '-' and CRLF, e.g. "NOPERM denied"
	Reply    string          // ReplaceReply: the raw RESP reply to write, e.g. "$7\r\ninvalid\r\n"
	// Fired, when non-nil, receives one record (non-blocking send) each time the fault fires.
	Fired chan<- FaultRecord
}

// FaultRecord tells that a fault fired, on which command (or, for a push
// fault, on which invalidation: ["invalidate", key...], for which client).
type FaultRecord struct {
	Kind     FaultKind
	ClientID int64
	Args     []string
}
