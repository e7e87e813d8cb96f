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
		token, "id", "", "200", "1", "3", "RPUSH", logKey(key), "label")
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

// fairTry is a fair waiter's try for token on key (single: it does not
// queue), answered reply (":1" when it took the key).
func fairTry(seq int64, reply, key, token string) sim.Execution {
	return exec(seq, 7, reply, "EVALSHA", conn.ScriptSHA(conn.FairMutexTryScript), "3", key, "{"+key+"}:q", "{"+key+"}:l",
		token, "200", "300", "1")
}

// TestNoGuardedWriteAfterTakeover_TheChaosCheckerCountsAFairTakeAsAnAcquisition:
// a fair try answered 1 (the key free, or reserved for the token) is an
// acquisition as a SET NX is: the guarded writes of its taker are not
// stale, and the previous owner's (the outsider's included) are.
func TestNoGuardedWriteAfterTakeover_TheChaosCheckerCountsAFairTakeAsAnAcquisition(t *testing.T) {
	history := []sim.Execution{
		exec(1, 0, "+OK\r\n", "SET", "{k}", "outsider-0", "NX", "PX", "50"),
		fairTry(2, ":0\r\n", "{k}", "a"), // refused: the outsider holds it
		fairTry(3, ":1\r\n", "{k}", "a"), // the outsider's lease ended: a takes it
		guard(4, ":1\r\n", "{k}", "a"),
		guard(5, ":0\r\n", "{k}", "outsider-0"), // refused: stale, counted
	}
	got, stale := checkGuardAfterTakeover(observation{start: t0, history: history})
	if len(got) != 0 || stale != 1 {
		t.Fatalf("%v, %d stale; want no violation and one stale (refused) guard", got, stale)
	}
	history = append(history, fairTry(6, ":1\r\n", "{k}", "b"), guard(7, ":1\r\n", "{k}", "a"))
	if got, _ := checkGuardAfterTakeover(observation{start: t0, history: history}); len(got) != 1 || got[0].Rule != RuleGuardAfterTakeover {
		t.Fatalf("a's guard wrote after b's fair try took the key: %v; want one violation", got)
	}
}

// TestChaosWorkerStreamsAreApart: the per-worker PCG streams of the
// campaign (a worker's own, its primitives', its guarded writes', its fair
// draws') never share a stream for any worker count a schedule can have,
// so that one part's draws are not another's (the fair and the guard
// streams were once the same constant).
func TestChaosWorkerStreamsAreApart(t *testing.T) {
	const maxWorkers = 1 << 16
	bases := map[string]uint64{"worker": 0, "primitives": streamPrimWorkers, "guard": streamGuardWorkers, "fair": streamFairWorkers}
	for a, x := range bases {
		for b, y := range bases {
			if a < b && (x < y && y-x < maxWorkers || y <= x && x-y < maxWorkers) {
				t.Errorf("the %s streams (%#x+w) and the %s streams (%#x+w) overlap", a, x, b, y)
			}
		}
	}
	for name, s := range map[string]uint64{"plan": streamPlan, "faults": streamFaults, "outsider": streamOutsider, "push faults": streamPushFaults,
		"partition": streamPartition, "transport": streamTransport, "fair": streamFair, "primitives": streamPrimitives} {
		for b, y := range bases {
			if s >= y && s-y < maxWorkers {
				t.Errorf("the %s stream %#x is one of the %s streams", name, s, b)
			}
		}
	}
}
