package dst

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// fenced is a handle named name of key.
func fenced(name, key string) *handle { return &handle{name: name, key: key} }

// Invariant 6 orders tokens by the server's hand-out, not by when the
// replies arrive: a late reply of an older run is no violation; a token
// that is not larger than an earlier run's is.
func TestInvariant6ComparesTokensInServerHandOutOrder(t *testing.T) {
	w := newWorld(Options{Seed: 1}.withDefaults())
	w.check.onFencingToken(w, fenced("h1", "lock:1"), 2, 2)
	w.check.onFencingToken(w, fenced("h2", "lock:1"), 1, 1) // older run, reply arrived later
	w.check.onFencingToken(w, fenced("h3", "lock:2"), 3, 1) // another counter
	if len(w.check.violations) != 0 {
		t.Fatalf("violations = %v; want none", w.check.violations)
	}
	w.check.onFencingToken(w, fenced("h4", "lock:1"), 4, 2) // a token reused
	if len(w.check.violations) != 1 || w.check.violations[0].Invariant != 6 {
		t.Fatalf("violations = %v; want one of invariant 6", w.check.violations)
	}
}

// Goal: fenced acquisitions under every fault, with two keys, keep every
// invariant; tokens are handed out.
func TestScenarioFencedLocksUnderChurn(t *testing.T) {
	tokens := 0
	for seed := uint64(1); seed <= 150; seed++ {
		opt := Options{Seed: seed, Processes: 4, Keys: 2, FencedPercent: 50, DropAfterExecPercent: 5, DelayReplyPercent: 5,
			FailoverPercent: 2, MoveSlotPercent: 5, CancelPercent: 15, PauseProcessPercent: 1,
			LeaseMin: 15 * time.Millisecond, LeaseMax: 50 * time.Millisecond}
		opt.Rerun = rerun(t)
		r := Run(opt)
		if r.Failed() {
			opt.Transcript = true
			t.Fatalf("%s", Run(opt).Report())
		}
		tokens += r.Stats.FencingTokens
	}
	if tokens == 0 {
		t.Fatal("no fencing token was handed out")
	}
}

// A fenced script names two keys of one slot: during a migration the
// cluster runs it only where both keys are, asks for the target when
// neither is on the source, and answers TRYAGAIN when they are split.
func TestFencedScriptFollowsMultiKeyMigrationRules(t *testing.T) {
	w := newWorld(Options{Seed: 1}.withDefaults())
	source, target := w.nodes[0], newNode(w, sim.Redis70, w.nodeKeys())
	m := &migration{from: source, to: target}
	cmd := conn.NewFencedAcquire("lock:1", counterKey("lock:1"), "tok", 100).Command()
	reply := func(n *node, asking bool) string {
		r, redirected := n.migratingMultiKey(w, cmd, source, m, asking)
		if !redirected {
			return "run"
		}
		return strings.Fields(r.Text)[0]
	}
	if got := reply(source, false); got != "ASK" {
		t.Fatalf("source with neither key: %s; want ASK", got)
	}
	if got := reply(target, true); got != "TRYAGAIN" {
		t.Fatalf("target after ASKING with neither key: %s; want TRYAGAIN", got)
	}
	source.engine.AdminExec("SET", counterKey("lock:1"), "7")
	if got := reply(source, false); got != "TRYAGAIN" {
		t.Fatalf("source with the counter only: %s; want TRYAGAIN", got)
	}
	source.engine.AdminExec("SET", "lock:1", "other", "PX", "1000")
	source.refresh(w, "lock:1")
	if got := reply(source, false); got != "run" {
		t.Fatalf("source with both keys: %s; want run", got)
	}
	w.moveSlot("lock:1", target)
	if got := parseReply([]byte(target.engine.AdminExec("GET", counterKey("lock:1")))); got.Text != "7" {
		t.Fatalf("counter after the slot move = %+v; want 7 (moved with its slot)", got)
	}
}
