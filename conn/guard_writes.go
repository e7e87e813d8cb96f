package conn

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// This file is the allowlist of the write commands a guarded write may run
// (GuardOp): each command's argument shape, checked before anything is
// sent, and which of its arguments are keys (declared in the script's
// KEYS, so that a cluster routes the script and refuses keys of another
// slot, and an ACL key pattern applies). Nothing else runs: a command off
// the list, or with arguments the server would refuse as a syntax error,
// is refused here, so that a syntax error can never stop the script
// halfway through the writes.

// The errors of a bad guarded write, returned before anything is sent
// (inside a *WriteError that names the write).
var (
	// ErrWriteNotAllowed: the command is not on the allowlist.
	ErrWriteNotAllowed = errors.New("not on the guarded writes' allowlist")
	// ErrWriteArgs: the command's arguments do not have its shape (count,
	// an integer or a score where one is needed, an unknown option).
	ErrWriteArgs = errors.New("wrong arguments for the command")
	// ErrReservedKey: a write names one of the lock's own keys (the lease
	// key, the write-id record, the fence record), which only the guard
	// script itself may write.
	ErrReservedKey = errors.New("the write names a key of the lock itself")
	// ErrNoWrites: a guarded write with no command (and no script).
	ErrNoWrites = errors.New("nothing to write")
	// ErrTooManyArgs: more arguments than one guarded write may carry
	// (MaxWriteArgs per command, MaxGuardArgs in all).
	ErrTooManyArgs = errors.New("too many arguments")
)

// MaxWriteArgs bounds the arguments of one command of a guarded write (its
// name included), and MaxGuardArgs those of all its commands together: the
// script spreads each command's arguments on Lua's stack, which holds
// about 8,000 values in Redis and Valkey.
const (
	MaxWriteArgs = 1024
	MaxGuardArgs = 65536
)

// WriteError is a guarded write refused before anything was sent: Index is
// the position of the bad command among the writes (0 for the first; -1
// for the writes as a whole), Command its name as given. It matches the
// reason (ErrWriteNotAllowed, ErrWriteArgs, ErrReservedKey,
// ErrTooManyArgs, ErrNoWrites) with errors.Is. Its text names no argument
// and no key.
type WriteError struct {
	Index   int
	Command string
	Detail  string // what was wrong, without argument values
	Err     error
}

// Error describes the refusal.
func (e *WriteError) Error() string {
	text := e.Err.Error()
	if e.Detail != "" {
		text += ": " + e.Detail
	}
	if e.Index < 0 {
		return text
	}
	return fmt.Sprintf("write %d (%s): %s", e.Index, e.Command, text)
}

// Unwrap returns the reason.
func (e *WriteError) Unwrap() error { return e.Err }

// writeShape checks one allowlisted command's arguments (args[0] is the
// name) and returns the index in args of its last key (its keys are
// args[1:lastKey+1]: every command of the allowlist names its keys first),
// or a detail of what is wrong.
type writeShape func(args []string) (lastKey int, bad string)

// allowedWrites is the allowlist, by upper-case name (docs/compatibility.md
// lists it with the ACL each command needs).
var allowedWrites = map[string]writeShape{
	"SET":     setShape,
	"DEL":     everyKey,
	"UNLINK":  everyKey,
	"EXPIRE":  expireShape,
	"PEXPIRE": expireShape,
	"PERSIST": exactly(2),
	"INCR":    exactly(2),
	"DECR":    exactly(2),
	"INCRBY":  keyAndInteger,
	"DECRBY":  keyAndInteger,
	"APPEND":  exactly(3),
	"HSET":    hsetShape,
	"HDEL":    atLeast(3),
	"HINCRBY": hincrbyShape,
	"LPUSH":   atLeast(3),
	"RPUSH":   atLeast(3),
	"SADD":    atLeast(3),
	"SREM":    atLeast(3),
	"ZADD":    zaddShape,
	"ZREM":    atLeast(3),
	"XADD":    xaddShape,
}

// AllowedWriteCommands returns the allowlist's command names, sorted.
func AllowedWriteCommands() []string {
	names := make([]string, 0, len(allowedWrites))
	for name := range allowedWrites {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// CheckWrite checks one write command (args[0] is its name, in any case)
// against the allowlist and returns the index of its last key: its keys
// are args[1:lastKey+1]. The error is a *WriteError with Index -1 (set it to
// the write's position).
func CheckWrite(args []string) (lastKey int, err error) {
	if len(args) == 0 {
		return 0, &WriteError{Index: -1, Err: ErrWriteNotAllowed, Detail: "empty command"}
	}
	shape, ok := allowedWrites[args[0]]
	if !ok {
		shape, ok = allowedWrites[strings.ToUpper(args[0])]
	}
	if !ok {
		return 0, &WriteError{Index: -1, Command: args[0], Err: ErrWriteNotAllowed}
	}
	if len(args) > MaxWriteArgs {
		return 0, &WriteError{Index: -1, Command: args[0], Err: ErrTooManyArgs,
			Detail: fmt.Sprintf("%d arguments, at most %d", len(args), MaxWriteArgs)}
	}
	lastKey, bad := shape(args)
	if bad != "" {
		return 0, &WriteError{Index: -1, Command: args[0], Err: ErrWriteArgs, Detail: bad}
	}
	return lastKey, nil
}

func exactly(n int) writeShape {
	return func(args []string) (int, string) {
		if len(args) != n {
			return 0, fmt.Sprintf("takes %d argument(s), got %d", n-1, len(args)-1)
		}
		return 1, ""
	}
}

func atLeast(n int) writeShape {
	return func(args []string) (int, string) {
		if len(args) < n {
			return 0, fmt.Sprintf("takes at least %d argument(s), got %d", n-1, len(args)-1)
		}
		return 1, ""
	}
}

func everyKey(args []string) (int, string) {
	if len(args) < 2 {
		return 0, "takes at least 1 key"
	}
	return len(args) - 1, ""
}

func keyAndInteger(args []string) (int, string) {
	if len(args) != 3 {
		return 0, fmt.Sprintf("takes a key and an integer, got %d argument(s)", len(args)-1)
	}
	if !isInteger(args[2]) {
		return 0, "the increment is not an integer"
	}
	return 1, ""
}

func hincrbyShape(args []string) (int, string) {
	if len(args) != 4 {
		return 0, fmt.Sprintf("takes a key, a field and an integer, got %d argument(s)", len(args)-1)
	}
	if !isInteger(args[3]) {
		return 0, "the increment is not an integer"
	}
	return 1, ""
}

func hsetShape(args []string) (int, string) {
	if len(args) < 4 || (len(args)-2)%2 != 0 {
		return 0, "takes a key and field-value pairs"
	}
	return 1, ""
}

// expireShape: EXPIRE|PEXPIRE key n [NX|XX|GT|LT].
func expireShape(args []string) (int, string) {
	if len(args) != 3 && len(args) != 4 {
		return 0, "takes a key, a time and at most one of NX, XX, GT, LT"
	}
	if !isInteger(args[2]) {
		return 0, "the time is not an integer"
	}
	if len(args) == 4 && !oneOf(args[3], "NX", "XX", "GT", "LT") {
		return 0, "unknown option"
	}
	return 1, ""
}

// setShape: SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL].
func setShape(args []string) (int, string) {
	if len(args) < 3 {
		return 0, "takes a key and a value"
	}
	var cond, get, expiry bool
	for i := 3; i < len(args); i++ {
		switch a := strings.ToUpper(args[i]); {
		case (a == "NX" || a == "XX") && !cond:
			cond = true
		case a == "GET" && !get:
			get = true
		case a == "KEEPTTL" && !expiry:
			expiry = true
		case oneOf(a, "EX", "PX", "EXAT", "PXAT") && !expiry:
			if i+1 >= len(args) || !isPositive(args[i+1]) {
				return 0, a + " needs a positive integer"
			}
			expiry = true
			i++
		default:
			return 0, "unknown or repeated option"
		}
	}
	return 1, ""
}

// zaddShape: ZADD key [NX|XX] [GT|LT] [CH] score member [score member …].
func zaddShape(args []string) (int, string) {
	rest := args[zaddOptions(args):]
	if len(rest) == 0 || len(rest)%2 != 0 {
		return 0, "takes score-member pairs after its options"
	}
	for j := 0; j < len(rest); j += 2 {
		if !isScore(rest[j]) {
			return 0, "a score is not a number"
		}
	}
	return 1, ""
}

// zaddOptions returns the index of ZADD's first score: past the options it
// accepts together (NX with neither XX nor GT/LT, each at most once).
func zaddOptions(args []string) int {
	var nx, xx, gtlt, ch bool
	for i := 2; i < len(args); i++ {
		switch a := strings.ToUpper(args[i]); {
		case a == "NX" && !nx && !xx && !gtlt:
			nx = true
		case a == "XX" && !xx && !nx:
			xx = true
		case (a == "GT" || a == "LT") && !gtlt && !nx:
			gtlt = true
		case a == "CH" && !ch:
			ch = true
		default:
			return i
		}
	}
	return len(args)
}

// xaddShape: XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT
// count]] *|id field value [field value …].
func xaddShape(args []string) (int, string) {
	i := 2
	if i < len(args) && strings.EqualFold(args[i], "NOMKSTREAM") {
		i++
	}
	if i < len(args) && oneOf(args[i], "MAXLEN", "MINID") {
		i++
		approx := false
		if i < len(args) && (args[i] == "=" || args[i] == "~") {
			approx = args[i] == "~"
			i++
		}
		if i >= len(args) {
			return 0, "the trim needs a threshold"
		}
		i++
		if i < len(args) && strings.EqualFold(args[i], "LIMIT") {
			if !approx || i+1 >= len(args) || !isInteger(args[i+1]) {
				return 0, "LIMIT needs ~ and an integer"
			}
			i += 2
		}
	}
	rest := args[i:]
	if len(rest) < 3 || (len(rest)-1)%2 != 0 {
		return 0, "takes an id and field-value pairs"
	}
	return 1, ""
}

func oneOf(s string, options ...string) bool {
	for _, o := range options {
		if strings.EqualFold(s, o) {
			return true
		}
	}
	return false
}

// isInteger accepts what the server parses as a 64-bit integer: an
// optional minus sign and digits, without leading zeros.
func isInteger(s string) bool {
	if _, err := strconv.ParseInt(s, 10, 64); err != nil {
		return false
	}
	digits := strings.TrimPrefix(s, "-") // ParseInt accepted it: one optional sign, then digits
	return s[0] != '+' && (digits[0] != '0' || s == "0")
}

func isPositive(s string) bool { return isInteger(s) && mustInt(s) > 0 }

func mustInt(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// isScore accepts a sorted-set score: a float, "inf", "+inf" or "-inf".
func isScore(s string) bool {
	if oneOf(s, "inf", "+inf", "-inf") {
		return true
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && f == f && !strings.ContainsAny(s, "xXpP_") && !oneOf(s, "nan", "+nan", "-nan")
}
