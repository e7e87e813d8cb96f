package conn

import (
	"slices"
	"strconv"
	"strings"
)

// This file is the pure protocol part of conn: it builds lock commands and
// interprets replies. It has no rueidis types, no goroutines and no clock, so
// the production transport (session.go) and the deterministic simulator
// drive exactly the same rules.

// The Lua scripts and their SHA1 digests (listed in docs/compatibility.md).
const (
	ReleaseScript    = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
	ReleaseScriptSHA = "e9f69f2beb755be68b5e456ee2ce9aadfbc4ebf4"
	ExtendScript     = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
	ExtendScriptSHA  = "9136fcf51831e5cf49f109b6e9c97d5b675280d6"
)

// ReplyKind tells which RESP type a Reply carries.
type ReplyKind int

// The reply kinds the lock commands produce.
const (
	ReplyStatus ReplyKind = iota + 1 // +OK
	ReplyInt                         // :1
	ReplyBulk                        // $3 abc
	ReplyNil                         // $-1 or RESP3 _
	ReplyError                       // -ERR ..., -NOPERM ..., -MOVED ...
	ReplyArray                       // *2 ... (CLUSTER SLOTS, ROLE); RESP3 maps and sets too, flattened
)

// Reply is one server reply, independent of any client library. For
// ReplyError, Text is the whole error line as the server sent it, code
// included ("ERR syntax error", "NOSCRIPT No matching script."). The zero
// Reply (Kind 0) is "no reply": a command a failed pipeline left without
// one (see Conn.Do).
//
// A client adapter maps every RESP type onto these kinds: simple and
// verbatim strings to ReplyStatus or ReplyBulk (the engine treats both
// as text), RESP3 null to ReplyNil, booleans to ReplyInt 1 or ReplyNil,
// doubles and big numbers to ReplyBulk with their text, arrays, sets and
// maps (key, value, key, value…) to ReplyArray.
type Reply struct {
	Kind  ReplyKind
	Text  string  // status, bulk or error text
	Int   int64   // ReplyInt
	Array []Reply // ReplyArray: the elements
	// Err, for ReplyError, is the client's own error value for the reply
	// when it has one (rueidis' *RedisError, go-redis' redis.Error), kept
	// as the cause of the engine's Definite *Error so that errors.As to the
	// client's type works; nil otherwise.
	Err error
}

// Command is one wire command: Args[0] is the command name and Args[Key] is
// the key that routes it (-1 for keyless commands such as ASKING).
type Command struct {
	Args []string
	Key  int
}

// Step names which implementation a Command is.
type Step int

// The steps of the extension and release ladders.
const (
	StepSetIfeq        Step = iota + 1 // SET k tok IFEQ tok PX ms
	StepExtendEvalsha                  // EVALSHA <cap> 1 k tok ms
	StepExtendEval                     // EVAL <cap> 1 k tok ms
	StepDelex                          // DELEX k IFEQ tok
	StepDelifeq                        // DELIFEQ k tok
	StepReleaseEvalsha                 // EVALSHA <cad> 1 k tok
	StepReleaseEval                    // EVAL <cad> 1 k tok
	StepGet                            // GET k (owner query)
	StepAcquire                        // SET k tok NX PX ms (acquisition)
)

// AcquireCommand is SET key token NX PX ttlMillis.
func AcquireCommand(key, token string, ttlMillis int64) Command {
	return Command{Args: []string{"SET", key, token, "NX", "PX", strconv.FormatInt(ttlMillis, 10)}, Key: 1}
}

// OwnerCommand is GET key.
func OwnerCommand(key string) Command {
	return Command{Args: []string{"GET", key}, Key: 1}
}

// ScoreCommand is ZSCORE key member: a sorted-set member's score (nil when
// it is no member), a read a watcher tracks.
func ScoreCommand(key, member string) Command {
	return Command{Args: []string{"ZSCORE", key, member}, Key: 1}
}

// WatchedResult reads the reply to a watcher's read: GET's (OwnerResult),
// or with score ZSCORE's, found when the member exists (the token is then
// empty; the score, a RESP3 double, is not read).
func WatchedResult(r Reply, score bool) (token string, found bool, err *ServerError) {
	if !score {
		return OwnerResult(r)
	}
	switch r.Kind {
	case ReplyError:
		return "", false, newServerError(r.Text)
	case ReplyNil:
		return "", false, nil
	}
	return "", true, nil
}

// AskingCommand is ASKING, sent right before a command after an ASK redirect.
func AskingCommand() Command { return Command{Args: []string{"ASKING"}, Key: -1} }

// ClientIDCommand is CLIENT ID.
func ClientIDCommand() Command { return Command{Args: []string{"CLIENT", "ID"}, Key: -1} }

// ClientInfoCommand is CLIENT INFO.
func ClientInfoCommand() Command { return Command{Args: []string{"CLIENT", "INFO"}, Key: -1} }

// FenceCommand is CLIENT KILL ID id ADDR addr.
func FenceCommand(id int64, addr string) Command {
	return Command{Args: []string{"CLIENT", "KILL", "ID", strconv.FormatInt(id, 10), "ADDR", addr}, Key: -1}
}

// ProbeKillCommand is CLIENT KILL ID id SKIPME yes: sent on the session with
// its own id, it kills nothing and answers :0 when CLIENT KILL is permitted.
func ProbeKillCommand(id int64) Command {
	return Command{Args: []string{"CLIENT", "KILL", "ID", strconv.FormatInt(id, 10), "SKIPME", "yes"}, Key: -1}
}

// ClusterSlotsCommand is CLUSTER SLOTS.
func ClusterSlotsCommand() Command { return Command{Args: []string{"CLUSTER", "SLOTS"}, Key: -1} }

// AcquireResult maps the reply of AcquireCommand: +OK → true, nil → false.
func AcquireResult(r Reply) (bool, *ServerError) {
	switch {
	case r.Kind == ReplyError:
		return false, newServerError(r.Text)
	case isOK(r):
		return true, nil
	case r.Kind == ReplyNil:
		return false, nil
	}
	return false, unexpected(r)
}

// OwnerResult maps the reply of OwnerCommand: bulk → token, nil → not found.
func OwnerResult(r Reply) (token string, found bool, err *ServerError) {
	switch r.Kind {
	case ReplyError:
		return "", false, newServerError(r.Text)
	case ReplyBulk, ReplyStatus:
		return r.Text, true, nil
	case ReplyNil:
		return "", false, nil
	}
	return "", false, unexpected(r)
}

// Redirect is a MOVED or ASK reply: the command did not run on this node.
type Redirect struct {
	Ask  bool   // ASK (one-shot, needs ASKING) rather than MOVED
	Slot int    // the hash slot named in the reply
	Addr string // host:port of the node to try
}

// ParseRedirect recognises "MOVED <slot> <addr>" and "ASK <slot> <addr>".
func ParseRedirect(text string) (Redirect, bool) {
	fields := strings.Fields(text)
	if len(fields) != 3 || (fields[0] != "MOVED" && fields[0] != "ASK") {
		return Redirect{}, false
	}
	slot, err := strconv.Atoi(fields[1])
	if err != nil {
		return Redirect{}, false
	}
	return Redirect{Ask: fields[0] == "ASK", Slot: slot, Addr: fields[2]}, true
}

// IsReadOnlyReply recognises the replica's "READONLY ..." write refusal.
func IsReadOnlyReply(text string) bool { return strings.HasPrefix(text, "READONLY ") }

// didNotRunCodes are the error codes whose reply proves the command did not
// run and says a later attempt may succeed: the cluster cannot serve the
// slot now (CLUSTERDOWN), a migration is under way (TRYAGAIN), the node is
// not a primary (READONLY) or has lost its primary (MASTERDOWN), is loading
// its data (LOADING), runs a script (BUSY), has too few replicas to accept
// writes (NOREPLICAS), or is out of memory under maxmemory (OOM: a command
// that may grow memory is refused before it runs; inside a script, only at
// the script's first write, so the script changed nothing either).
var didNotRunCodes = []string{"CLUSTERDOWN", "TRYAGAIN", "READONLY", "MASTERDOWN", "LOADING", "BUSY", "NOREPLICAS", "OOM"}

// IsDidNotRunReply reports whether text is an error reply of one of those
// codes (the first word, exact case, as servers send it).
func IsDidNotRunReply(text string) bool {
	code, _, _ := strings.Cut(text, " ")
	return slices.Contains(didNotRunCodes, code)
}

// isOK recognises +OK (the transport may report it as a string of either kind).
func isOK(r Reply) bool { return (r.Kind == ReplyStatus || r.Kind == ReplyBulk) && r.Text == "OK" }

// isUnknownCommand reports whether text is the standard unknown-command
// error for name: "ERR unknown command 'NAME', ..." (or with backticks),
// compared ignoring case, trailing comma required.
func isUnknownCommand(text, name string) bool {
	lower := strings.ToLower(text)
	n := strings.ToLower(name)
	return strings.HasPrefix(lower, "err unknown command '"+n+"',") ||
		strings.HasPrefix(lower, "err unknown command `"+n+"`,")
}

// isSyntaxError is the one reply that proves SET ... IFEQ is unsupported:
// exactly "ERR syntax error", case-sensitive, whole message.
func isSyntaxError(text string) bool { return text == "ERR syntax error" }

// isNoScript recognises the NOSCRIPT code (Redis and Valkey texts differ).
func isNoScript(text string) bool {
	return text == "NOSCRIPT" || strings.HasPrefix(text, "NOSCRIPT ")
}
