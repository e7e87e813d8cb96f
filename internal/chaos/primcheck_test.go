package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// prim is a permit or hold believed over [from, until] (ms after t0).
func prim(kind holdKind, token string, from, until float64) *holding {
	h := held("r", token, from, until)
	h.kind = kind
	return h
}

func primObs(holdings ...*holding) observation {
	return observation{start: t0, prim: primPlan{sem: "s", limit: 2, rw: "rw"}, holdings: holdings}
}

func TestSemaphoreNeverOverLimit_TheChaosCheckerFlagsAThirdLivePermit(t *testing.T) {
	margin := float64(driftMargin(200*time.Millisecond)) / float64(time.Millisecond)
	two := primObs(prim(holdPermit, "a", 0, 100), prim(holdPermit, "b", 0, 100), prim(holdPermit, "c", 100-margin+0.5, 200))
	if got := checkOverLimit(two); len(got) != 0 {
		t.Fatalf("a third permit within the margin of the others' end: %v; want none", got)
	}
	three := primObs(prim(holdPermit, "a", 0, 100), prim(holdPermit, "b", 0, 100), prim(holdPermit, "c", 50, 200))
	if got := checkOverLimit(three); len(got) != 1 {
		t.Fatalf("three permits live at +50ms with limit 2: %v; want one violation", got)
	}
	reads := primObs(prim(holdRead, "a", 0, 100), prim(holdRead, "b", 0, 100), prim(holdRead, "c", 0, 100))
	if got := checkOverLimit(reads); len(got) != 0 {
		t.Fatalf("read holds are not permits: %v", got)
	}
}

func TestRWLockWriterPreferring_TheChaosCheckerFlagsAReaderWithAWriter(t *testing.T) {
	readers := primObs(prim(holdRead, "a", 0, 100), prim(holdRead, "b", 10, 100))
	if got := checkReaderWriter(readers); len(got) != 0 {
		t.Fatalf("readers together: %v; want none", got)
	}
	after := primObs(prim(holdRead, "a", 0, 100), prim(holdWrite, "w", 98, 200))
	if got := checkReaderWriter(after); len(got) != 0 {
		t.Fatalf("a writer within the reader's margin of its end: %v; want none", got)
	}
	with := primObs(prim(holdRead, "a", 0, 100), prim(holdWrite, "w", 50, 200), prim(holdWrite, "x", 150, 300))
	if got := checkReaderWriter(with); len(got) != 2 {
		t.Fatalf("a reader and a writer, two writers, together: %v; want two violations", got)
	}
}

func TestRWLockWriterPreferring_TheChaosCheckerFlagsAStarvedWriter(t *testing.T) {
	stall := &fault{kind: FaultStall, dur: 100 * time.Millisecond}
	faulted := []faultEvent{{at: at(0), f: stall}, {at: at(100), f: stall, lift: true}}
	waited := primWait{label: "w", start: at(10), end: at(800), gaveUp: true}
	reader := prim(holdRead, "r", 150, 200)
	obs := primObs(reader)
	obs.writers, obs.events = []primWait{waited}, faulted
	got := checkWriterStarved(obs)
	if len(got) != 1 {
		// The reader came 50 ms after the stall's lift: allowed. But the
		// writer gave up though the lock was free for its last 300 ms (from
		// the reader's belief end plus its lease on: a release that
		// answered would end it sooner).
		t.Fatalf("%v; want one violation (the writer ignored a free lock)", got)
	}
	reader.settledAt = at(210)
	late := prim(holdRead, "late", 400, 450)
	late.settledAt = at(460)
	obs = primObs(reader, late)
	obs.writers, obs.events = []primWait{waited}, faulted
	if got := checkWriterStarved(obs); len(got) != 2 {
		t.Fatalf("%v; want two violations: a reader admitted 300 ms into a fault-free wait, and the free lock ignored", got)
	}
	obs.holdings[1].lease = time.Second // its lease could outlive the wait: only the admission counts
	obs.holdings[1].settledAt = time.Time{}
	if got := checkWriterStarved(obs); len(got) != 1 {
		t.Fatalf("%v; want only the reader admitted while the writer waited", got)
	}
}

func TestRWLockWriterPreferring_TheChaosCheckerCountsWhatTheWritersOwnTriesLeft(t *testing.T) {
	waited := primWait{label: "w", start: at(10), end: at(800), gaveUp: true}
	try := func(seq int64, ms float64, token, reply string) sim.Execution {
		e := exec(seq, 5, reply, "EVALSHA", conn.WriteAcquireScriptSHA, "2", "{rw}:w", "{rw}:r", token, "200", "1030")
		e.At = at(ms)
		return e
	}
	obs := primObs()
	obs.writers = []primWait{waited}
	// A try left a marker it could not settle (a fresh token after it); the
	// later tries are refused by that marker until its lease ends.
	obs.history = []sim.Execution{try(1, 20, "old", ":2\r\n"), try(2, 400, "new", ":0\r\n"), try(3, 790, "newer", ":0\r\n")}
	if got := checkWriterStarved(obs); len(got) != 0 {
		t.Fatalf("%v; want none: its own earlier try's marker lasts to +1050ms", got)
	}
	obs.history = []sim.Execution{try(1, 20, "w1", ":2\r\n"), try(2, 400, "w1", ":0\r\n"), try(3, 790, "w1", ":0\r\n")}
	if got := checkWriterStarved(obs); len(got) != 1 {
		t.Fatalf("%v; want one: refused with nothing but its own current marker there", got)
	}
}

func TestUncertainWriteNeverReplayed_TheChaosCheckerCountsPermitAndReaderScripts(t *testing.T) {
	history := []sim.Execution{
		exec(1, 5, ":1\r\n", "EVALSHA", conn.SemaphoreAcquireScriptSHA, "1", "{s}:sem", "p", "200", "2"),
		exec(2, 5, ":1\r\n", "EVALSHA", conn.HolderReleaseScriptSHA, "1", "{s}:sem", "p"),
		exec(3, 5, ":2\r\n", "EVALSHA", conn.WriteAcquireScriptSHA, "2", "{rw}:w", "{rw}:r", "w", "200", "1030"),
		exec(4, 5, ":1\r\n", "EVALSHA", conn.WriteAcquireScriptSHA, "2", "{rw}:w", "{rw}:r", "w", "200", "1030"),
	}
	if got := checkResent(observation{start: t0, history: history}); len(got) != 0 {
		t.Fatalf("one permit taken and released, a writer waiting then taking: %v; want none", got)
	}
	history = append(history,
		exec(5, 6, ":1\r\n", "EVAL", conn.SemaphoreAcquireScript, "1", "{s}:sem", "p", "200", "2"),
		exec(6, 6, ":1\r\n", "EVALSHA", conn.ReadAcquireScriptSHA, "2", "{rw}:w", "{rw}:r", "r", "200"),
		exec(7, 6, ":1\r\n", "EVALSHA", conn.ReadAcquireScriptSHA, "2", "{rw}:w", "{rw}:r", "r", "200"),
		exec(8, 6, ":0\r\n", "EVALSHA", conn.HolderReleaseScriptSHA, "1", "{rw}:r", "r"),
		exec(9, 6, ":0\r\n", "EVALSHA", conn.HolderReleaseScriptSHA, "1", "{rw}:r", "r"))
	if got := checkResent(observation{start: t0, history: history}); len(got) != 3 {
		t.Fatalf("a permit's acquisition, a reader's acquisition and its release each ran twice: %v; want three", got)
	}
}

func TestCrashedHolderFreesAtLeaseEnd_TheChaosCheckerFlagsAPermitKeptPastItsLease(t *testing.T) {
	dead := prim(holdPermit, "dead", 0, 190) // lease 200 ms, acquired at 0: gone from the server by +200ms
	dead.crashed = true
	live := prim(holdPermit, "live", 0, 1000)
	live.settledAt = at(1000)
	waited := primWait{label: "p", start: at(100), end: at(800), gaveUp: true}
	obs := primObs(dead, live)
	obs.permits = []primWait{waited}
	if got := checkPermitFrees(obs); len(got) != 1 {
		t.Fatalf("%v; want one violation: the dead holder's permit was free from +200ms, the waiter gave up at +800ms", got)
	}
	dead.crashed = false // alive, it may have renewed: its lease may run to its belief's end plus a lease
	dead.promise = at(400)
	if got := checkPermitFrees(obs); len(got) != 0 {
		t.Fatalf("%v; want none: two leases could be on the server at +500ms", got)
	}
	dead.crashed = true
	obs.failures = []acquireFailure{{label: "gone", kind: holdPermit, abandoned: true, start: at(300), end: at(350), lease: 200 * time.Millisecond}}
	if got := checkPermitFrees(obs); len(got) != 0 {
		t.Fatalf("%v; want none: an abandoned acquisition's permit could be on the server until +650ms", got)
	}
	obs.failures = nil
	stall := &fault{kind: FaultStall, dur: 200 * time.Millisecond}
	obs.events = []faultEvent{{at: at(450), f: stall}, {at: at(650), f: stall, lift: true}}
	if got := checkPermitFrees(obs); len(got) != 0 {
		t.Fatalf("%v; want none: a fault in force in the waiter's last 300 ms", got)
	}
}

// TestRWLockWriterPreferring_TheChaosCheckerTimesAReadersAdmissionByTheWire:
// on a real server (no execution history) the starvation check times a
// writer's wait from the reply of its first try that set its marker, and a
// reader's admission from the send of the script that admitted it (the
// wire log), not from when the calls started or returned: a loaded
// machine can send the writer's first try long after its call began, and
// return a reader's acquisition long after the server admitted it. A
// reader sent once the marker was known to be set is still flagged.
func TestRWLockWriterPreferring_TheChaosCheckerTimesAReadersAdmissionByTheWire(t *testing.T) {
	writerKey := writerKeyOf(primPlan{rw: "rw"})
	try := func(sent, answered float64, reply string) wireExec {
		return wireExec{sent: at(sent), answered: at(answered), reply: reply,
			args: []string{"EVALSHA", conn.WriteAcquireScriptSHA, "2", writerKey, "rw-readers", "w", "1000", "30"}}
	}
	read := func(token string, sent, answered float64) wireExec {
		return wireExec{sent: at(sent), answered: at(answered), reply: ":1\r\n",
			args: []string{"EVALSHA", conn.ReadAcquireScriptSHA, "2", writerKey, "rw-readers", token, "200"}}
	}
	waited := primWait{label: "w", start: at(10), end: at(2000), acquired: true}
	early := prim(holdRead, "early", 900, 1000) // its call returned at 900, admitted by a script sent at 200
	obs := primObs(early)
	obs.writers = []primWait{waited}
	if got := checkWriterStarved(obs); len(got) != 1 {
		t.Fatalf("%v; without a wire log, a reader returning 890 ms into the writer's call is flagged", got)
	}
	obs.wire = []wireExec{try(10, 700, ":2\r\n"), read("early", 200, 650)}
	if got := checkWriterStarved(obs); len(got) != 0 {
		t.Fatalf("%v; want none: the reader was admitted before the writer's first try answered", got)
	}
	late := prim(holdRead, "late", 1300, 1400)
	obs = primObs(early, late)
	obs.writers = []primWait{waited}
	obs.wire = []wireExec{try(10, 700, ":2\r\n"), read("early", 200, 650), read("late", 1200, 1250)}
	if got := checkWriterStarved(obs); len(got) != 1 || !strings.Contains(got[0].Evidence, "late") {
		t.Fatalf("%v; want the reader sent 500 ms after the marker was known flagged", got)
	}
}
