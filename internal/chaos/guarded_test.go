package chaos

import (
	"testing"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// guard is a guarded-write script's execution for token on key, answered
// reply (as conn encodes an RPUSH to the key's log).
func guard(seq int64, reply, key, token string) sim.Execution {
	record := conn.GuardRecordKey(key)
	return exec(seq, 5, reply, "EVALSHA", conn.GuardWritesScriptSHA, "4", key, record, record, logKey(key),
		token, "id", "", "1", "3", "RPUSH", logKey(key), "label")
}

// TestNoGuardedWriteAfterTakeover_TheChaosCheckerFlagsAGuardAfterAnotherAcquisition:
// the checker accepts guarded writes of the key's latest acquirer and the
// refusals of stale ones, and flags a stale holder's guard script that
// wrote after another owner's SET NX (the outsider's included).
func TestNoGuardedWriteAfterTakeover_TheChaosCheckerFlagsAGuardAfterAnotherAcquisition(t *testing.T) {
	history := []sim.Execution{
		exec(1, 5, "+OK\r\n", "SET", "k", "a", "NX", "PX", "200"),
		guard(2, ":1\r\n", "k", "a"),
		exec(3, 6, "$-1\r\n", "SET", "k", "b", "NX", "PX", "200"), // contended: a still holds
		guard(4, ":1\r\n", "k", "a"),
		exec(5, 0, "+OK\r\n", "SET", "k", "outsider-1", "NX", "PX", "200"),
		guard(6, ":0\r\n", "k", "a"), // refused: stale, counted
	}
	got, stale := checkGuardAfterTakeover(observation{start: t0, history: history})
	if len(got) != 0 || stale != 1 {
		t.Fatalf("%v, %d stale; want no violation and one stale (refused) guard", got, stale)
	}
	history = append(history, guard(7, ":1\r\n", "k", "a"))
	if got, _ := checkGuardAfterTakeover(observation{start: t0, history: history}); len(got) != 1 || got[0].Rule != RuleGuardAfterTakeover {
		t.Fatalf("a's guard wrote after the outsider acquired: %v; want one violation", got)
	}
}
