package sim

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

// Push faults (DropPush, DelayPush) over real sockets, reading raw bytes:
// a tracking client's PING ("sync") returns everything queued for it
// before the PING ran, so what it does not return was not sent yet.

// trackTwo opens a RESP3 connection tracking k1 and k2, and a writer.
func trackTwo(sc *scenario) (tracker, writer *wire) {
	sc.t.Helper()
	tracker = sc.conn("tracker", 3)
	sc.step("tracker: CLIENT TRACKING on", "+OK\r\n")
	sc.step("tracker: GET k1", "_\r\n")
	sc.step("tracker: GET k2", "_\r\n")
	return tracker, sc.conn("writer", 2)
}

// firedOnce waits for the fault's record and checks it.
func firedOnce(t *testing.T, fired <-chan FaultRecord, kind FaultKind, client string, args ...string) {
	t.Helper()
	select {
	case rec := <-fired:
		if rec.Kind != kind || !slices.Equal(rec.Args, args) || strconv.FormatInt(rec.ClientID, 10) != client {
			t.Fatalf("fault record %+v; want kind %d, client %s, args %q", rec, kind, client, args)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the push fault did not fire")
	}
}

// TestFaultDropPushNeverArrives: the dropped invalidation of k1 is never
// written, the later one of k2 is; k1 is forgotten as if it had been sent
// (a second change sends nothing), on every profile.
func TestFaultDropPushNeverArrives(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		tracker, _ := trackTwo(sc)
		fired := make(chan FaultRecord, 1)
		sc.s.Inject(Fault{Kind: DropPush, Key: "k1", Fired: fired})
		sc.step("writer: SET k1 a", "+OK\r\n")
		sc.step("writer: SET k2 a", "+OK\r\n")
		firedOnce(t, fired, DropPush, sc.ids["tracker"], "invalidate", "k1")
		if got := tracker.sync(); got != inv("k2") {
			t.Fatalf("tracker received %q; want only %q", got, inv("k2"))
		}
		sc.step("writer: SET k1 b", "+OK\r\n")
		sc.step("tracker: sync", "")
		sc.step("tracker: GET k1", "$1\r\nb\r\n") // tracked again; the fault fired once
		sc.step("writer: DEL k1", ":1\r\n")
		sc.step("tracker: sync", inv("k1"))
	})
}

// TestFaultDelayPushArrivesAfterGate: a delayed invalidation and the one
// queued behind it are sent, in order, once the gate closes; replies
// overtake them meanwhile.
func TestFaultDelayPushArrivesAfterGate(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		tracker, _ := trackTwo(sc)
		gate, fired := make(chan struct{}), make(chan FaultRecord, 1)
		sc.s.Inject(Fault{Kind: DelayPush, Key: "k1", Gate: gate, Fired: fired})
		sc.step("writer: SET k1 a", "+OK\r\n")
		sc.step("writer: SET k2 a", "+OK\r\n")
		firedOnce(t, fired, DelayPush, sc.ids["tracker"], "invalidate", "k1")
		sc.step("tracker: sync", "") // held: k2's waits behind k1's; PONG overtakes both
		sc.step("tracker: GET k2", "$1\r\na\r\n")
		close(gate)
		if got := tracker.readN(2); got != inv("k1")+inv("k2") {
			t.Fatalf("after the gate: %q; want %q", got, inv("k1")+inv("k2"))
		}
		sc.step("writer: SET k2 b", "+OK\r\n") // k2 was read again while held: tracked, and no fault left
		sc.step("tracker: sync", inv("k2"))
	})
}

// TestFaultDelayPushThroughRedirect: a DelayPush with a Delay and the
// redirect target's ClientID holds the __redis__:invalidate message of a
// RESP2 REDIRECT, which then arrives; the next one is not delayed.
func TestFaultDelayPushThroughRedirect(t *testing.T) {
	sc := newScenario(t, startSim(t, Config{}))
	target := sc.conn("target", 2)
	sc.step("target: SUBSCRIBE __redis__:invalidate", subInval)
	sc.conn("tracker", 2)
	sc.step("tracker: CLIENT TRACKING on REDIRECT $target", "+OK\r\n")
	sc.step("tracker: GET k", "$-1\r\n")
	sc.conn("writer", 2)
	id := sc.ids["target"]
	n, _ := strconv.ParseInt(id, 10, 64)
	fired := make(chan FaultRecord, 1)
	sc.s.Inject(Fault{Kind: DelayPush, ClientID: n, Delay: 20 * time.Millisecond, Fired: fired})
	sc.step("writer: SET k a", "+OK\r\n")
	firedOnce(t, fired, DelayPush, id, "invalidate", "k")
	if got := target.read(); got != invMsg("k") {
		t.Fatalf("target received %q; want %q", got, invMsg("k"))
	}
	sc.step("tracker: GET k", "$1\r\na\r\n")
	sc.step("writer: SET k b", "+OK\r\n")
	sc.step("target: sync", invMsg("k"))
}

// TestFaultPushFaultsLeaveTheRestAlone: push faults that match nothing
// (another key, another client) change nothing; push faults never fire on
// commands nor command faults on invalidations; pub/sub messages pass; a
// flush's invalidation matches any Key.
func TestFaultPushFaultsLeaveTheRestAlone(t *testing.T) {
	sc := newScenario(t, startSim(t, Config{}))
	trackTwo(sc)
	sc.s.Inject(Fault{Kind: DropPush, Key: "other"})
	sc.s.Inject(Fault{Kind: DropPush, ClientID: 999999})
	sc.s.Inject(Fault{Kind: FailWith, Command: "PING", Error: "ERR not for pushes", Match: func(a []string) bool {
		return a[0] == "invalidate"
	}})
	sc.step("writer: SET k1 a", "+OK\r\n")
	sc.step("tracker: sync", inv("k1"))
	sc.step("tracker: SUBSCRIBE ch", ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n")
	sc.s.Inject(Fault{Kind: DropPush})
	sc.step("writer: PUBLISH ch hi", ":1\r\n")
	sc.step("tracker: sync", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n")
	sc.step("tracker: GET k2", "_\r\n") // the armed DropPush does not touch commands either
	sc.step("writer: FLUSHALL", "+OK\r\n")
	sc.step("tracker: sync", "") // the first DropPush took the flush's null: it matches any Key
	log := sc.s.FaultLog()
	if len(log) != 1 || log[0].Kind != DropPush || !slices.Equal(log[0].Args, []string{"invalidate"}) {
		t.Fatalf("FaultLog = %+v; want one DropPush, of the flush", log)
	}
}

// TestFaultDelayPushDiesWithItsConnection: invalidations held for a
// connection that goes away are discarded with it, and a Server closed
// while a gate is still shut ends the goroutine waiting on it (TestMain
// checks for leaks).
func TestFaultDelayPushDiesWithItsConnection(t *testing.T) {
	s := startSim(t, Config{})
	sc := newScenario(t, s)
	trackTwo(sc)
	gate, fired := make(chan struct{}), make(chan FaultRecord, 1)
	s.Inject(Fault{Kind: DelayPush, Key: "k1", Gate: gate, Fired: fired})
	sc.step("writer: SET k1 a", "+OK\r\n")
	firedOnce(t, fired, DelayPush, sc.ids["tracker"], "invalidate", "k1")
	id, _ := strconv.ParseInt(sc.ids["tracker"], 10, 64)
	if !s.KillClient(id) {
		t.Fatal("KillClient: no such client")
	}
	s.e.mu.Lock()
	_, held := s.e.pf.held[id]
	s.e.mu.Unlock()
	if held {
		t.Fatal("the killed client's held invalidations were kept")
	}
	close(gate) // releases nothing: the client is gone

	other := sc.conn("other", 3)
	sc.step("other: CLIENT TRACKING on", "+OK\r\n")
	sc.step("other: GET k2", "_\r\n")
	s.Inject(Fault{Kind: DelayPush, Key: "k2", Gate: make(chan struct{})}) // never opened: Close must end its wait
	sc.step("writer: SET k2 a", "+OK\r\n")
	if got := other.sync(); got != "" {
		t.Fatalf("other received %q while its invalidation is held", got)
	}
}
