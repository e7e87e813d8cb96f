package lease

import (
	"context"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
)

// Write is one write command of a guarded write (Lock.Guard): a command of
// the allowlist with its arguments. Build it with Command. The zero value
// is no command (Guard refuses it).
type Write struct {
	args []string
}

// Command returns the write command name args… (for example
// Command("HSET", "{job:42}:state", "step", "3")). The name is one of
// AllowedWriteCommands, in any case; its arguments are checked against the
// command's shape when Guard is called, before anything is sent. Keys are
// sent as given: a Locks' key prefix applies to lock keys, not to these.
// The arguments are copied.
func Command(name string, args ...string) Write {
	return Write{args: append([]string{name}, args...)}
}

// Args returns the command, name first (a copy).
func (w Write) Args() []string { return append([]string(nil), w.args...) }

// CheckWrite checks w against the allowlist and its command's shape, as
// Guard does before sending, and returns the *WriteError (Index 0) Guard
// would return, or nil. Whether its keys are the lock's own, or share its
// slot, depends on the lock: Guard checks that too. It sends nothing.
func CheckWrite(w Write) error {
	if _, err := conn.CheckWrite(w.args); err != nil {
		err.(*WriteError).Index = 0
		return err
	}
	return nil
}

// AllowedWriteCommands returns the commands a guarded write may run,
// sorted: SET, DEL, UNLINK, EXPIRE, PEXPIRE, PERSIST, INCR, DECR, INCRBY,
// DECRBY, APPEND, HSET, HDEL, HINCRBY, LPUSH, RPUSH, SADD, SREM, ZADD,
// ZREM, XADD. Each is checked for the shape the server accepts (argument
// count, integers and scores, options), so that no syntax error can stop
// the script halfway through its writes. For anything else, use a
// GuardScript.
func AllowedWriteCommands() []string { return conn.AllowedWriteCommands() }

// GuardScript is a Lua script that runs as a guarded write: see
// NewGuardScript. It is immutable and safe to share.
type GuardScript = conn.GuardScript

// NewGuardScript wraps body, your Lua, into a guarded write. The calling
// convention: body is the body of a Lua function whose parameters are
// named KEYS and ARGV and hold exactly the Keys and Args of the Guarded
// that runs it (KEYS[1] is your first key: the lock's own keys are not in
// it). It runs only after the guard passed — the lock's key holds its
// token, and for a fencing-token lock the fence record is not above its
// token — in the same atomic step; its return value is dropped. Declare in
// Keys every key body touches (a cluster routes and checks the script by
// them, and they must share the lock key's slot); body must not write the
// lock's own keys. Build it once (a package-level variable) and reuse it:
// the server caches it under its SHA1 (EVALSHA, EVAL after NOSCRIPT).
// Redis scripts are not transactions: a command that fails at run time
// stops body there, and the writes before it stay.
func NewGuardScript(body string) *GuardScript { return conn.NewGuardScript(body) }

// Guarded is a guarded write with everything Lock.GuardWith accepts:
// Writes, or Script with Keys and Args (not both), and optionally a WAIT
// for Replicas replicas within ReplicaTimeout after the writes ran.
type Guarded struct {
	Writes []Write
	Script *GuardScript
	Keys   []string // Script's keys, KEYS in its body
	Args   []string // Script's arguments, ARGV in its body
	// Replicas ≥ 1 makes GuardWith, after the writes ran, wait until that
	// many replicas acknowledged them (WAIT, at most ReplicaTimeout,
	// whole milliseconds, ≥ 1 ms) and fail with a
	// *WriteNotReplicatedError when fewer did. 0: no WAIT.
	Replicas       int
	ReplicaTimeout time.Duration
}

// The errors of guarded writes (see Lock.Guard).
var (
	// ErrWriteNotAllowed: a command is not on the allowlist.
	ErrWriteNotAllowed = conn.ErrWriteNotAllowed
	// ErrWriteArgs: a command's arguments do not have its shape.
	ErrWriteArgs = conn.ErrWriteArgs
	// ErrReservedKey: a write names one of the lock's own keys: its key,
	// its write-id record or its fence record.
	ErrReservedKey = conn.ErrReservedKey
	// ErrNoWrites: a guarded write with nothing to run.
	ErrNoWrites = conn.ErrNoWrites
	// ErrTooManyArgs: more arguments than one guarded write may carry.
	ErrTooManyArgs = conn.ErrTooManyArgs
	// ErrGuardKind: a semaphore permit or a read hold cannot guard writes
	// (other holders share its set).
	ErrGuardKind = actor.ErrGuardKind
	// ErrNotWritten matches a *NotWrittenError: the write's reply was
	// lost, and settling proved it never ran.
	ErrNotWritten = actor.ErrNotWritten
	// ErrWriteNotReplicated matches a *WriteNotReplicatedError.
	ErrWriteNotReplicated = actor.ErrWriteNotReplicated
	// ErrReplicasUnsupported: Replicas was asked of a client whose
	// transport cannot WAIT after a guarded write.
	ErrReplicasUnsupported = actor.ErrReplicasUnsupported
)

// WriteError is a guarded write refused before anything was sent: Index
// is the position of the bad write (-1: the writes as a whole), Command
// its name as given. It matches its reason (ErrWriteNotAllowed,
// ErrWriteArgs, ErrReservedKey, ErrNoWrites, ErrTooManyArgs) and names no
// argument or key.
type WriteError = conn.WriteError

// NotWrittenError is a guarded write whose reply was lost and which
// settling proved never ran: sending it again is safe. It matches
// ErrNotWritten (and not ErrOutcomeUnknown: the outcome is known); Cause
// is the transport's error.
type NotWrittenError = actor.NotWrittenError

// WriteNotReplicatedError is a guarded write that ran on the primary but
// that fewer than Guarded.Replicas replicas acknowledged within the
// timeout (Acknowledged; -1 and Err when WAIT gave no count). The writes
// stay; a failover to a replica that did not receive them loses them.
type WriteNotReplicatedError = actor.WriteNotReplicatedError

// Guard runs writes, in order, on the server only while this lock holds
// its key — atomically, in one script whose first step compares the key's
// value with the lock's owner token. For a fencing-token lock (package
// coordination) it also checks that no larger fencing token wrote through
// the lock's counter (the fence record), and records this lock's token
// there. Every key of writes must live in the lock key's cluster slot (a
// hash tag: "{job:42}:lease" and "{job:42}:state"); writes are checked
// against the allowlist (AllowedWriteCommands) before anything is sent.
//
// It returns:
//   - nil: the writes ran (their replies are not returned).
//   - an error matching ErrOwnershipLost (its *LossError has Reason
//     LossGuardRefused, or LossFenceRefused): the key no longer held the
//     token, or a larger fencing token had written; nothing was written,
//     and the lock is lost from now on (its Context ends with that cause,
//     its keep-alive stops), as when a push reveals the loss.
//   - an error matching ErrNotWritten: the reply was lost (a reset, a
//     timeout), the connection that carried the write was fenced (CLIENT
//     KILL) and the write-id record the script keeps was read back: the
//     writes never ran and never will. Sending them again is safe.
//   - an error matching ErrOutcomeUnknown: the reply was lost and settling
//     could not tell (ctx ended first, the connection could not be fenced,
//     the lease ran out meanwhile). The writes may have run.
//   - any other error: nothing was sent (ErrNotHeld — a lock released,
//     lost or past its estimate —, ErrNotSubmitted, a *WriteError,
//     ErrCrossSlot, ErrGuardKind, ctx's cause), or the server refused the
//     script (ErrServerReply: NOPERM, or a write that failed at run time,
//     such as WRONGTYPE, after the writes before it ran: a Redis script is
//     not a transaction).
//
// Guarded writes of one lock run one at a time, in call order, each
// waiting for the previous one's settling. Guard blocks for one round trip
// (and for settling, while ctx lasts); the Locks' command timeout applies.
// What it protects, and what it cannot (data outside Redis, failovers):
// docs/fencing.md.
func (l *Lock) Guard(ctx context.Context, writes ...Write) error {
	return l.GuardWith(ctx, Guarded{Writes: writes})
}

// GuardWith is Guard with a user script (Guarded.Script) instead of
// commands, or a WAIT for replicas after the writes ran
// (Guarded.Replicas): see Guard for the outcomes, and
// WriteNotReplicatedError for a WAIT that counted too few.
func (l *Lock) GuardWith(ctx context.Context, g Guarded) error {
	spec := actor.Guarded{Script: g.Script, Keys: g.Keys, Args: g.Args, Replicas: g.Replicas,
		ReplicaTimeout: g.ReplicaTimeout}
	if len(g.Writes) > 0 {
		spec.Writes = make([][]string, len(g.Writes))
		for i, w := range g.Writes {
			spec.Writes[i] = w.args
		}
	}
	if g.Script != nil && len(g.Writes) > 0 {
		return opError("Guard", l.Key(), &WriteError{Index: -1, Err: ErrWriteArgs,
			Detail: "give commands or a script, not both"})
	}
	return opError("Guard", l.Key(), l.core().Guard(ctx, spec))
}
