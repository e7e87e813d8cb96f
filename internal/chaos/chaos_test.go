package chaos

import (
	"context"
	"maps"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leakcheck"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m, leakcheck.RueidisBackground()...)
}

// budgetParallel is how many schedules the CI budget runs at a time: the
// schedules mostly wait (real-time leases and faults), so 4 fit 2 cores
// even with -race.
const budgetParallel = 4

// TestChaosCampaign_SimServersBreakNoRule is the CI budget on sim nodes: 60
// schedules, seeds 1–60, so every profile runs 15 of them. No rule may
// break, and the budget must have exercised what it claims to.
func TestChaosCampaign_SimServersBreakNoRule(t *testing.T) {
	stats := runBudget(t, Options{}, 1, 60)
	for k, n := range stats.Faults {
		if n == 0 {
			t.Errorf("no %s fault was applied in the budget", FaultKind(k))
		}
	}
	if stats.Acquisitions == 0 || stats.Uncertain == 0 || stats.Fences == 0 || stats.OutsiderWrites == 0 {
		t.Errorf("the budget exercised too little: %s", stats)
	}
}

// TestChaosCampaign_RealRedis70BreaksNoRule is the CI budget on the real
// redis-server 7.0 that scripts/with-servers.sh starts: 20 schedules.
func TestChaosCampaign_RealRedis70BreaksNoRule(t *testing.T) {
	addr, password := os.Getenv("RESPIRE_REAL_REDIS70"), os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
	if addr == "" {
		t.Skip("RESPIRE_REAL_REDIS70 not set: no real redis-server 7.0 (the Makefile starts one)")
	}
	realserver.Lock(t, addr)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: password})
	if err != nil {
		t.Fatalf("connecting to %s: %v", addr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = client.Do(ctx, client.B().Flushall().Build()).Error()
	client.Close()
	if err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
	stats := runBudget(t, Options{Target: addr, Password: password}, 1001, 20)
	if stats.Acquisitions == 0 || stats.Uncertain == 0 {
		t.Errorf("the budget exercised too little: %s", stats)
	}
}

// runBudget runs n schedules from seed first, budgetParallel at a time,
// fails the test for every violation, and returns the totals.
func runBudget(t *testing.T, opt Options, first uint64, n int) Stats {
	t.Helper()
	seeds := make(chan uint64)
	results := make(chan Result)
	var wg sync.WaitGroup
	for range budgetParallel {
		wg.Go(func() {
			for seed := range seeds {
				o := opt
				o.Seed = seed
				results <- Run(o)
			}
		})
	}
	go func() {
		for i := range n {
			seeds <- first + uint64(i)
		}
		close(seeds)
		wg.Wait()
		close(results)
	}()
	var total Stats
	notes := map[string]bool{}
	for r := range results {
		total.Add(r.Stats)
		for _, v := range r.Violations {
			t.Errorf("seed %d (%s): %s\n  faults: %s\n  replay: %s", r.Seed, r.Profile, v,
				strings.Join(r.Timeline, "; "), r.Replay())
		}
		for _, note := range r.Notes {
			if !notes[note] {
				notes[note] = true
				t.Logf("note (seed %d): %s", r.Seed, note)
			}
		}
	}
	t.Logf("exercised: %s", total)
	return total
}

// TestSeededSchedules_TheChaosSeedDecidesThePlanAndTheDecisions: the same seed gives
// the same plan, fault schedule and worker decisions.
func TestSeededSchedules_TheChaosSeedDecidesThePlanAndTheDecisions(t *testing.T) {
	for seed := range uint64(50) {
		a, b := newPlan(seed), newPlan(seed)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two plans differ:\n%+v\n%+v", seed, a, b)
		}
		if len(a.faults) < 3 || a.processes < 2 || a.workers < 4 || len(a.keys) < 2 {
			t.Fatalf("seed %d: plan out of range: %+v", seed, a)
		}
		ra, rb := workerRand(seed, 3), workerRand(seed, 3)
		for range 20 {
			if da, db := decide(ra, 3), decide(rb, 3); da != db {
				t.Fatalf("seed %d: decisions differ: %+v vs %+v", seed, da, db)
			}
		}
	}
}

// Checker tests: synthetic evidence, one rule at a time.

var t0 = time.Unix(1_700_000_000, 0)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func held(key, token string, from, until float64) *holding {
	return &holding{key: key, token: token, label: token, lease: 200 * time.Millisecond,
		acquiredAt: at(from), promise: at(until)}
}

func TestNoTwoOwners_TheChaosCheckerFlagsAnOverlapBeyondTheMargin(t *testing.T) {
	margin := float64(driftMargin(200*time.Millisecond)) / float64(time.Millisecond) // 4 ms
	for _, tc := range []struct {
		name      string
		secondAt  float64
		violation bool
	}{
		{"a gap", 110, false},
		{"an overlap within the margin", 100 - margin + 0.5, false},
		{"an overlap beyond the margin", 100 - margin - 0.5, true},
	} {
		obs := observation{start: t0, keys: []string{"k"},
			holdings: []*holding{held("k", "a", 0, 100), held("k", "b", tc.secondAt, 300)}}
		if got := checkTwoOwners(obs); (len(got) > 0) != tc.violation {
			t.Errorf("%s: violations %v; want violation %v", tc.name, got, tc.violation)
		}
	}
	gapObs := observation{start: t0, keys: []string{"k"},
		holdings: []*holding{held("k", "a", 0, 100), held("k", "b", 110, 300), held("k", "c", 250, 400)}}
	if gap, ok := closestGap(gapObs); !ok || gap != -50*time.Millisecond {
		t.Errorf("closestGap = %v, %v; want -50ms (c started 50ms before b's end)", gap, ok)
	}
	gapObs.holdings = gapObs.holdings[:2]
	if gap, ok := closestGap(gapObs); !ok || gap != 10*time.Millisecond {
		t.Errorf("closestGap = %v, %v; want 10ms", gap, ok)
	}
	// The outsider's interval: from its reply to its send plus PX less the margin.
	obs := observation{start: t0, keys: []string{"k"}, holdings: []*holding{held("k", "a", 50, 300)},
		writes: []outsiderWrite{{key: "k", token: "outsider-1", sent: at(0), replied: at(1), px: 200 * time.Millisecond}}}
	if got := checkTwoOwners(obs); len(got) != 1 {
		t.Errorf("a handle acquired while the outsider's lease ran: %v; want one violation", got)
	}
	// A release call ends the belief, a keep-alive's cancellation too.
	a := held("k", "a", 0, 300)
	a.endCall = at(100)
	c := held("k", "c", 0, 300)
	c.keepAlive, c.kaEnd = true, at(100)
	for _, first := range []*holding{a, c} {
		obs := observation{start: t0, keys: []string{"k"}, holdings: []*holding{first, held("k", "b", 110, 300)}}
		if got := checkTwoOwners(obs); len(got) != 0 {
			t.Errorf("belief ended at +100ms: %v; want none", got)
		}
	}
}

func exec(seq, client int64, reply string, args ...string) sim.Execution {
	return sim.Execution{Seq: seq, ClientID: client, Args: args, Reply: reply, At: at(float64(seq))}
}

func TestUncertainWriteNeverReplayed_TheChaosCheckerCountsOnlyExecutedUnrefusedWrites(t *testing.T) {
	ladder := []sim.Execution{ // Redis 7.0's fallback: refused steps do not count
		exec(1, 5, "+OK\r\n", "SET", "k", "tok", "NX", "PX", "200"),
		exec(2, 5, "-ERR unknown command 'DELEX'\r\n", "DELEX", "k", "IFEQ", "tok"),
		exec(3, 5, "-NOSCRIPT No matching script.\r\n", "EVALSHA", conn.ReleaseScriptSHA, "1", "k", "tok"),
		exec(4, 5, ":1\r\n", "EVAL", conn.ReleaseScript, "1", "k", "tok"),
	}
	if got := checkResent(observation{start: t0, history: ladder}); len(got) != 0 {
		t.Fatalf("one SET and one delete through the fallback ladder: %v; want none", got)
	}
	resent := append(ladder, exec(5, 6, "$-1\r\n", "SET", "k", "tok", "NX", "PX", "200"),
		exec(6, 6, ":0\r\n", "DELIFEQ", "k", "tok"))
	if got := checkResent(observation{start: t0, history: resent}); len(got) != 2 {
		t.Fatalf("a SET NX and a delete each ran twice: %v; want two violations", got)
	}
}

func TestFenceIsFinal_TheChaosCheckerFlagsACommandRunAfterTheFence(t *testing.T) {
	history := []sim.Execution{
		exec(1, 7, ":0\r\n", "CLIENT", "KILL", "ID", "7", "SKIPME", "yes"), // the probe fences nothing
		exec(2, 7, "+OK\r\n", "SET", "k", "tok", "NX", "PX", "200"),
		exec(3, 2, ":1\r\n", "CLIENT", "KILL", "ID", "7", "ADDR", "127.0.0.1:1"),
	}
	if got := checkFencedRan(observation{start: t0, history: history}); len(got) != 0 {
		t.Fatalf("%v; want none", got)
	}
	history = append(history, exec(4, 7, ":1\r\n", "DELIFEQ", "k", "tok"))
	if got := checkFencedRan(observation{start: t0, history: history}); len(got) != 1 {
		t.Fatalf("client 7 ran after its fence: %v; want one violation", got)
	}
}

func TestAbandonedAcquisitionIsCleanedUp_TheChaosCheckerFlagsOnlyTokensNobodyMayHold(t *testing.T) {
	released := held("k1", "released-token", 0, 100)
	released.released = true
	lost := held("k2", "lost-token", 0, 100)
	lost.toldLost = true
	base := observation{start: t0, keys: []string{"k1", "k2", "k3", "k4"}, holdings: []*holding{released, lost},
		failures: []acquireFailure{{key: "k4", abandoned: true}},
		final: map[string]keyState{
			"k1": {value: "released-token", found: true}, // violation
			"k2": {value: "lost-token", found: true},
			"k3": {value: "outsider-4", found: true},
			"k4": {value: "unknown-token", found: true}, // violation: Locks.Close waited for its clean-up
		},
		history: []sim.Execution{exec(1, 9, "+OK\r\n", "SET", "k4", "unknown-token", "NX", "PX", "300")},
	}
	got, expired := checkOrphans(base)
	if len(got) != 2 || expired != 1 {
		t.Fatalf("%v (expired %d); want two violations (released token, unknown token)", got, expired)
	}
	// An abandoned SET whose clean-up read saw its token must be deleted;
	// one that expired before any clean-up reached the server is counted.
	final := maps.Clone(base.final)
	delete(final, "k4")
	seen := observation{start: t0, keys: base.keys, holdings: base.holdings, final: final, history: []sim.Execution{
		exec(1, 9, "+OK\r\n", "SET", "k3", "seen-token", "NX", "PX", "200"),
		exec(2, 3, "$10\r\nseen-token\r\n", "GET", "k3"),
		exec(3, 9, "+OK\r\n", "SET", "k4", "cleaned-token", "NX", "PX", "200"),
		exec(4, 3, ":1\r\n", "DELIFEQ", "k4", "cleaned-token"),
		exec(5, 9, "+OK\r\n", "SET", "k2", "expired-token", "NX", "PX", "200"),
	}}
	got, expired = checkOrphans(seen)
	if len(got) != 2 || got[1].Key != "k3" || expired != 1 {
		t.Fatalf("%v (expired %d); want the released token and the seen, never deleted SET of k3, one expired", got, expired)
	}
	// A clean-up held up by faults for the whole lease (a black-holed socket,
	// then a paused server) could not reach the server: the lease expired.
	blackHole := &fault{kind: FaultBlackHole, dur: 120 * time.Millisecond}
	pause := &fault{kind: FaultPause, dur: 150 * time.Millisecond}
	seen.events = []faultEvent{{at: at(0), f: blackHole}, {at: at(100), f: pause},
		{at: at(120), f: blackHole, lift: true}, {at: at(250), f: pause, lift: true}}
	got, expired = checkOrphans(seen)
	if len(got) != 1 || expired != 2 {
		t.Fatalf("%v (expired %d); want only the released token, the faulted clean-up counted as expired", got, expired)
	}
}

func TestAbandonedAcquisitionIsCleanedUp_TheChaosCheckerWantsACleanUpOnlyWhenNoFaultHeldItUp(t *testing.T) {
	stall := &fault{kind: FaultStall, dur: 50 * time.Millisecond}
	obs := observation{events: []faultEvent{{at: at(10), f: stall}, {at: at(60), f: stall, lift: true}}}
	for _, tt := range []struct {
		from, to float64
		want     bool
	}{
		{0, 100, false},  // 10 ms before, 40 ms after the stall
		{0, 300, true},   // 240 ms after the lift
		{70, 200, false}, // 130 ms in all
		{70, 230, true},
	} {
		if got := healthyFor(obs, at(tt.from), at(tt.to), cleanupWindow); got != tt.want {
			t.Errorf("healthyFor(%v, %v) = %v; want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

// TestDriftMargin_IsTheLibrarysDefault keeps the checker's margin formula
// tied to the library's constants.
func TestDriftMargin_IsTheLibrarysDefault(t *testing.T) {
	if got, want := driftMargin(300*time.Millisecond), 3*time.Millisecond+lease.DefaultDriftFloor; got != want {
		t.Fatalf("driftMargin(300ms) = %v; want %v", got, want)
	}
}
