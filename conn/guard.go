package conn

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Guard is one guarded write: writes that run on the server only while a
// lease key holds its owner token (and, for a fencing-token lock, only
// while no larger fencing token wrote through the lock), in one script
// (guard_scripts.go). Build its Op with GuardOp.
type Guard struct {
	LeaseKey string // the lease key (wire key, prefix included)
	Token    string // the lock's owner token: a secret, never in an error
	// RecordKey is GuardRecordKey(LeaseKey), given when the caller keeps it
	// (a lock's guarded writes share it); "" computes it.
	RecordKey string
	WriteID   string // this write's fresh id, recorded in RecordKey when the writes run
	// RecordTTL is how long the write-id record lives (whole ms, rounded
	// up; at least 1 ms, or nothing is sent): the TTL of the lease the
	// lock's handle counts with, which is at least the lease key's
	// remaining TTL when the script runs after that lease was confirmed.
	RecordTTL time.Duration
	// FenceKey and FencingToken, for a fencing-token lock: the fence
	// record (GuardFenceKey of the counter key) and the lock's token.
	// FenceKey "" means no fence check.
	FenceKey     string
	FencingToken int64
	// Writes are allowlisted commands (CheckWrite), name first, run in
	// order; or Script with ScriptKeys and ScriptArgs instead.
	Writes     [][]string
	Script     *GuardScript
	ScriptKeys []string
	ScriptArgs []string
}

// guardOp is the Op name of guarded writes, in their errors.
const guardOp = "guarded-write"

// GuardOp returns the Op of g: EVALSHA of GuardWritesScript (or of g's
// Script), EVAL after NOSCRIPT, routed by the lease key. Result.Owned: the
// writes ran; false: the lease key does not hold the token, nothing
// written. A STALEFENCE reply is a Definite *Error with Code
// StaleFenceCode (nothing written). Bad input — a command off the
// allowlist or of the wrong shape, a write naming one of the lock's own
// keys, no write at all — is found here: the Op's Invalid (and every
// transport's Do) returns it, NotSubmitted, with a *WriteError cause, and
// nothing is sent. Keys in other cluster slots are the caller's to refuse
// (Transport.CheckFencedKeys on each of GuardKeys).
func GuardOp(g Guard) Op {
	record := g.RecordKey
	if record == "" {
		record = GuardRecordKey(g.LeaseKey)
	}
	fence, fencing := g.FenceKey, ""
	if fence == "" {
		fence = record
	} else {
		fencing = strconv.FormatInt(g.FencingToken, 10)
	}
	call := &primitiveCall{name: guardOp, kind: primGuard}
	reserved := [3]string{g.LeaseKey, record, g.FenceKey}
	ttl, badTTL := recordMillis(g.RecordTTL)
	if g.Script != nil {
		call.script, call.sha = g.Script.source, g.Script.sha
		call.keys = append([]string{g.LeaseKey, record, fence}, g.ScriptKeys...)
		call.args = append([]string{g.Token, g.WriteID, fencing, ttl}, g.ScriptArgs...)
		call.invalid = checkScriptKeys(g.ScriptKeys, reserved[:])
		if badTTL != nil {
			call.invalid = badTTL
		}
		return primitiveOp(call)
	}
	call.script, call.sha = GuardWritesScript, GuardWritesScriptSHA
	head := [...]string{g.LeaseKey, record, fence, g.Token, g.WriteID, fencing, ttl, strconv.Itoa(len(g.Writes))}
	call.evalsha, call.invalid = guardWrites(g.Writes, &head, reserved[:])
	if badTTL != nil {
		call.evalsha, call.invalid = nil, badTTL
	}
	if w := call.evalsha; w != nil {
		keys, _ := strconv.Atoi(w[2])
		call.keys, call.args = w[3:3+keys:3+keys], w[3+keys:]
	} else {
		// nothing is sent; the lease key names the error's route
		call.keys, call.args = append([]string(nil), head[:3]...), append([]string(nil), head[3:]...)
	}
	return primitiveOp(call)
}

// recordMillis is the write-id record's TTL argument: ttl in whole ms,
// rounded up, or a *WriteError when under 1 ms (a record that could
// expire before the lease would make settling unsound).
func recordMillis(ttl time.Duration) (string, error) {
	if ttl < time.Millisecond {
		return "", &WriteError{Index: -1, Err: ErrWriteArgs, Detail: "the write-id record needs a TTL of at least 1 ms"}
	}
	return millis(int64((ttl + time.Millisecond - 1) / time.Millisecond)), nil // the lock's TTL: its text reused
}

// guardWrites checks writes and returns the script's EVALSHA command
// (name and SHA1 first, then the number of keys) in one allocation of its
// final size: its keys are head's first three, then the keys the writes
// name, each once; its arguments head's last five, then each write's
// encoding (its argument count, then its arguments, name in upper case).
// Or nil and the *WriteError.
func guardWrites(writes [][]string, head *[8]string, reserved []string) ([]string, error) {
	if len(writes) == 0 {
		return nil, &WriteError{Index: -1, Err: ErrNoWrites}
	}
	total := 0
	for _, w := range writes {
		total += len(w) + 1
	}
	if total > MaxGuardArgs+len(writes) {
		return nil, &WriteError{Index: -1, Err: ErrTooManyArgs}
	}
	var few [8]int
	lasts := few[:0]
	named := 0
	for i, w := range writes {
		last, err := CheckWrite(w)
		if err != nil {
			err.(*WriteError).Index = i
			return nil, err
		}
		for _, k := range w[1 : last+1] {
			if isReserved(k, reserved) {
				return nil, &WriteError{Index: i, Command: w[0], Err: ErrReservedKey}
			}
		}
		lasts, named = append(lasts, last), named+last
	}
	cmd := make([]string, 0, 3+3+named+5+total)
	cmd = append(cmd, "EVALSHA", GuardWritesScriptSHA, "")
	cmd = append(cmd, head[:3]...)
	for i, w := range writes {
		for _, k := range w[1 : lasts[i]+1] {
			if !slices.Contains(cmd[6:], k) {
				cmd = append(cmd, k)
			}
		}
	}
	cmd[2] = strconv.Itoa(len(cmd) - 3)
	cmd = append(cmd, head[3:]...)
	for _, w := range writes {
		cmd = append(cmd, strconv.Itoa(len(w)), strings.ToUpper(w[0]))
		cmd = append(cmd, w[1:]...)
	}
	return cmd, nil
}

// checkScriptKeys refuses a user script's key that is one of the lock's own.
func checkScriptKeys(keys, reserved []string) error {
	for _, k := range keys {
		if isReserved(k, reserved) {
			return &WriteError{Index: -1, Err: ErrReservedKey}
		}
	}
	return nil
}

func isReserved(key string, reserved []string) bool {
	for _, r := range reserved {
		if r != "" && key == r {
			return true
		}
	}
	return false
}

// GuardKeys returns the keys of a guarded write's Op besides the lease key
// (the records, then the keys of the writes or the script), for a
// transport's slot check; nil for any other Op.
func (o Op) GuardKeys() []string {
	if o.kind != opPrimitive || o.prim.kind != primGuard {
		return nil
	}
	return o.prim.keys[1:]
}

// IsGuard reports whether o is a guarded write (GuardOp).
func (o Op) IsGuard() bool { return o.kind == opPrimitive && o.prim.kind == primGuard }

// GuardRecordKey returns the write-id record of the lease key leaseKey: a
// key in leaseKey's cluster slot. A lease key with a hash tag ("{t}…")
// gets ":guard" appended (the tag stays the first one); one without gets
// braces around it first ("{key}:guard", whose tag is the whole lease key,
// so it hashes as the lease key does), unless it holds a "}" — then
// ":guard" is appended, and in cluster mode the pair spans two slots and
// is refused before sending (ErrCrossSlot): give such a lease key a hash
// tag.
func GuardRecordKey(leaseKey string) string { return sameSlotKey(leaseKey, ":guard") }

// GuardFenceKey returns the fence record of a fencing-token lock whose
// counter key is counterKey (wire keys): the largest fencing token that
// wrote through the lock, in the counter's slot, named as GuardRecordKey
// names keys. Like the counter, it must never be deleted or given a TTL.
func GuardFenceKey(counterKey string) string { return sameSlotKey(counterKey, ":guarded") }

// sameSlotKey returns key followed by suffix, in key's cluster slot.
func sameSlotKey(key, suffix string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key + suffix // a non-empty tag: it stays the first one
		}
	}
	if strings.IndexByte(key, '}') < 0 {
		return "{" + key + "}" + suffix
	}
	return key + suffix
}
