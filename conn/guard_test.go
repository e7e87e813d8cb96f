package conn

import (
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// TestGuardedWriteValidatesBeforeSending_TheAllowlistChecksEachCommandsShape:
// CheckWrite accepts the allowlisted commands in every shape the server
// accepts, in any case, naming their keys, and refuses — with a
// *WriteError naming the reason — commands off the list and every shape
// the server would refuse as a syntax error (so that none can stop a
// guard script halfway through its writes).
func TestGuardedWriteValidatesBeforeSending_TheAllowlistChecksEachCommandsShape(t *testing.T) {
	ok := [][]string{
		{"SET", "k", "v"}, {"set", "k", "v", "NX", "PX", "100"}, {"SET", "k", "v", "XX", "GET", "KEEPTTL"},
		{"SET", "k", "v", "EXAT", "1700000000"}, {"DEL", "a", "b"}, {"UNLINK", "a"}, {"EXPIRE", "k", "10"},
		{"PEXPIRE", "k", "10", "GT"}, {"PERSIST", "k"}, {"INCR", "k"}, {"DECR", "k"}, {"INCRBY", "k", "-5"},
		{"DECRBY", "k", "9223372036854775807"}, {"APPEND", "k", "x"}, {"HSET", "h", "f", "v", "g", "w"},
		{"HDEL", "h", "f"}, {"HINCRBY", "h", "f", "2"}, {"LPUSH", "l", "a", "b"}, {"RPUSH", "l", "a"},
		{"SADD", "s", "m"}, {"SREM", "s", "m"}, {"ZADD", "z", "1", "a", "2.5", "b"}, {"ZADD", "z", "XX", "GT", "CH", "+inf", "m"},
		{"ZREM", "z", "a"}, {"XADD", "x", "*", "f", "v"}, {"XADD", "x", "NOMKSTREAM", "MAXLEN", "~", "10", "LIMIT", "5", "*", "f", "v"},
		{"XADD", "x", "MINID", "=", "0-1", "1-1", "f", "v", "g", "w"},
	}
	for _, w := range ok {
		last, err := CheckWrite(w)
		if err != nil || last != 1 && w[0] != "DEL" {
			t.Errorf("CheckWrite(%q) = %v, %v; want accepted, one key at 1", w, last, err)
		}
	}
	if last, _ := CheckWrite([]string{"DEL", "a", "b", "c"}); last != 3 {
		t.Errorf("DEL's last key at %d; want 3 (all three)", last)
	}
	bad := map[error][][]string{
		ErrWriteNotAllowed: {{}, {"FLUSHALL"}, {"EVAL", "return 1", "0"}, {"GET", "k"}, {"HGET", "h", "f"}, {"CLIENT", "KILL"}},
		ErrWriteArgs: {{"SET", "k"}, {"SET", "k", "v", "PX"}, {"SET", "k", "v", "PX", "0"}, {"SET", "k", "v", "NX", "XX"},
			{"SET", "k", "v", "EX", "1", "PX", "1"}, {"SET", "k", "v", "BOGUS"}, {"DEL"}, {"EXPIRE", "k"}, {"EXPIRE", "k", "1.5"},
			{"PEXPIRE", "k", "1", "SOON"}, {"INCR"}, {"INCRBY", "k", "x"}, {"INCRBY", "k", "01"}, {"HSET", "h", "f"},
			{"HSET", "h", "f", "v", "g"}, {"HINCRBY", "h", "f", "x"}, {"LPUSH", "l"}, {"ZADD", "z", "1"}, {"ZADD", "z", "x", "m"},
			{"ZADD", "z", "NX", "GT", "1", "m"}, {"ZADD", "z", "nan", "m"}, {"XADD", "x", "*"}, {"XADD", "x", "*", "f"},
			{"XADD", "x", "MAXLEN", "10", "LIMIT", "5", "*", "f", "v"}},
	}
	for want, writes := range bad {
		for _, w := range writes {
			_, err := CheckWrite(w)
			var we *WriteError
			if !errors.Is(err, want) || !errors.As(err, &we) {
				t.Errorf("CheckWrite(%q) = %v; want %v", w, err, want)
			}
		}
	}
	long := make([]string, MaxWriteArgs+1)
	long[0], long[1] = "DEL", "k"
	for i := 2; i < len(long); i++ {
		long[i] = "k"
	}
	if _, err := CheckWrite(long); !errors.Is(err, ErrTooManyArgs) {
		t.Errorf("a DEL of %d arguments: %v; want ErrTooManyArgs", len(long), err)
	}
}

// TestGuardedWriteValidatesBeforeSending_TheRecordsShareTheLeaseKeysSlot:
// the write-id record and the fence record hash to their key's slot:
// appended to a key with a hash tag, braced around a key without one; a
// key with a "}" but no tag cannot share (a cluster refuses it, cross-slot).
// GuardOp declares every key once, and refuses writes to the lock's own
// keys, empty writes and a write-id record without a TTL before anything
// is sent.
func TestGuardedWriteValidatesBeforeSending_TheRecordsShareTheLeaseKeysSlot(t *testing.T) {
	for key, want := range map[string]string{"{job:1}:lock": "{job:1}:lock:guard", "job:1": "{job:1}:guard",
		"a{b": "{a{b}:guard", "app:{t}x": "app:{t}x:guard"} {
		if got := GuardRecordKey(key); got != want || sim.Slot(got) != sim.Slot(key) {
			t.Errorf("GuardRecordKey(%q) = %q (slot %d, key's %d); want %q in the key's slot", key, got, sim.Slot(got), sim.Slot(key), want)
		}
	}
	if got := GuardRecordKey("a}b"); got != "a}b:guard" {
		t.Errorf("GuardRecordKey(a}b) = %q", got)
	}
	if got := GuardFenceKey("{inv}:fence"); got != "{inv}:fence:guarded" {
		t.Errorf("GuardFenceKey = %q", got)
	}
	op := GuardOp(Guard{LeaseKey: "{j}:lock", Token: "t", WriteID: "id", RecordTTL: 1500 * time.Microsecond,
		Writes: [][]string{{"hset", "{j}:h", "f", "v"}, {"INCR", "{j}:n"}, {"DEL", "{j}:h", "{j}:x"}}})
	if err := op.Invalid(); err != nil {
		t.Fatal(err)
	}
	if got := op.GuardKeys(); len(got) != 5 || got[0] != "{j}:lock:guard" || got[2] != "{j}:h" || got[4] != "{j}:x" {
		t.Errorf("GuardKeys = %q; want the record twice (no fence), then {j}:h {j}:n {j}:x once each", got)
	}
	call, _ := op.ScriptCall()
	if args := call.Command().Args; args[0] != "EVALSHA" || args[1] != GuardWritesScriptSHA || args[2] != "6" ||
		args[9] != "t" || args[12] != "2" || args[13] != "3" || args[14] != "4" || args[15] != "HSET" {
		t.Errorf("command %q", args)
	}
	for _, g := range []Guard{{LeaseKey: "{j}:lock", Writes: [][]string{{"DEL", "{j}:lock"}}},
		{LeaseKey: "{j}:lock", FenceKey: "{j}:fence:guarded", Writes: [][]string{{"SET", "{j}:fence:guarded", "1"}}},
		{LeaseKey: "{j}:lock"}, {LeaseKey: "{j}:lock", Writes: [][]string{{"DEL", "{j}:x"}}}} {
		if err := GuardOp(g).Invalid(); !errors.Is(err, ErrNotSubmitted) {
			t.Errorf("GuardOp(%+v).Invalid() = %v; want a not-submitted refusal", g.Writes, err)
		}
	}
}
