package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/leakcheck"

	"github.com/respire-go/respire/sim"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// testBudget bounds a whole run of the demo in these tests: only a stuck
// scene must fail them. The demo's own budget (30 s) is for a person at an
// idle machine; on a loaded one (load 30 on two cores) a run took longer.
const testBudget = 5 * time.Minute

// section returns the part of the demo's output about one profile.
func section(t *testing.T, out string, profile sim.Profile) string {
	t.Helper()
	start := strings.Index(out, "(sim profile "+string(profile)+")")
	if start < 0 {
		t.Fatalf("no section for %s in:\n%s", profile, out)
	}
	rest := out[start:]
	if end := strings.Index(rest[1:], "━━ "); end >= 0 {
		return rest[:end+1]
	}
	return rest
}

// TestDemoRunsAndShowsEachProfilesCommands: the demo finishes, tells every
// scene on every profile, shows the release ladder each server version
// needs, with tokens redacted, and the metrics each profile's scenes
// recorded.
func TestDemoRunsAndShowsEachProfilesCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testBudget)
	defer cancel()
	var buf bytes.Buffer
	if err := runWire(ctx, &buf); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	out := buf.String()
	wantWire := map[sim.Profile][]string{
		sim.Redis70: {"EVAL <release script> 1 locks:report <token>", "EVAL <extend script>"},
		sim.Redis84: {"DELEX locks:report IFEQ <token>", "SET locks:report <token> IFEQ <token> PX 60000"},
		sim.Valkey81: {"DELIFEQ locks:report <token>", "EVAL <release script> 1 locks:report <token>",
			"SET locks:report <token> IFEQ <token> PX 60000"},
		sim.Valkey90: {"DELIFEQ locks:report <token>", "SET locks:report <token> IFEQ <token> PX 60000"},
	}
	scenes := []string{
		"acquired   worker-a Acquire",
		"renewed    worker-a ResetExpiry(1m) → true, server PTTL 60000 ms",
		"renewed in the background, server PTTL 3000 ms",
		"contended  worker-b TryAcquire → Acquired() = false",
		"worker-b Acquire returned after the release → state Held",
		"worker-b ResetExpiry(30s) → false, state Lost",
		"worker-b Release → NotOwned (0 commands sent)",
		"context.Cause = ErrOwnershipLost",
		"then Release → Released",
		"Release again → AlreadyReleased (0 commands sent)",
		"worker-a stops waiting → Release waits for the fence: the delete may run until the kill answers,",
		"state Uncertain: the lock is no longer held; its session is being fenced",
		"the kill answers → Release returns: the error matches lease.ErrOutcomeUnknown, state Lost",
		"worker-a Release again → NotOwned (no delete sent), answered after waiting for the fence",
		"once the session that carried the delete was killed with CLIENT KILL",
		"CLIENT KILL ID <id of worker-a session> ADDR <addr>",
	}
	metrics := []string{ // words separated by single spaces (the table pads them)
		"respire.lock.acquisitions acquired 7, contended 1",
		"respire.lock.held 0",
		"respire.lock.releases released 3, unknown 1",
		"respire.lock.losses guard-refused 1, read-refused 1, refused 1, release-outcome-unknown 1",
		"respire.fences ok 1",
		"respire.sessions.opened 3",
		"respire.sessions.retired fenced 1",
	}
	// The paused scene's release by worker-b climbs the release ladder on a
	// connection that never released before (worker-a's lock, ended by its
	// refused guarded write, sends none), and its fenced acquisition and
	// guarded write load their scripts once per server (NOSCRIPT, then EVAL).
	wantFallbacks := map[sim.Profile]string{
		sim.Redis70:  "respire.fallbacks delex 2, delifeq 2, script-cache 4, set-ifeq 2",
		sim.Redis84:  "respire.fallbacks script-cache 2",
		sim.Valkey81: "respire.fallbacks delex 2, delifeq 2, script-cache 3",
		sim.Valkey90: "respire.fallbacks delex 2, script-cache 2",
	}
	for _, profile := range sim.Profiles {
		part := section(t, out, profile)
		for _, want := range append(scenes, wantWire[profile]...) {
			if !strings.Contains(part, want) {
				t.Errorf("%s section lacks %q:\n%s", profile, want, part)
			}
		}
		words := strings.Join(strings.Fields(part), " ")
		for _, want := range append(metrics, wantFallbacks[profile]) {
			if !strings.Contains(words, want) {
				t.Errorf("%s section's metrics lack %q:\n%s", profile, want, part)
			}
		}
		if wantFallbacks[profile] == "" && strings.Contains(part, "respire.fallbacks") {
			t.Errorf("%s section shows fallbacks; the server needs none:\n%s", profile, part)
		}
	}
	for _, row := range []string{
		"Redis 7.0   SET IFEQ → EVALSHA → EVAL    EVALSHA    DELEX → DELIFEQ → EVALSHA → EVAL   EVALSHA",
		"Redis 8.4   SET IFEQ                     SET IFEQ   DELEX                              DELEX",
		"Valkey 8.1  SET IFEQ                     SET IFEQ   DELEX → DELIFEQ → EVALSHA → EVAL   EVALSHA",
		"Valkey 9.0  SET IFEQ                     SET IFEQ   DELEX → DELIFEQ                    DELIFEQ",
	} {
		if !strings.Contains(out, row) {
			t.Errorf("summary lacks %q:\n%s", row, out)
		}
	}
	if tokenPattern.MatchString(out) || strings.Contains(out, "e9f69f2b") {
		t.Errorf("output shows a token or script digest:\n%s", out)
	}
}

// TestRedactHidesTokensAndNamesConnections: tokens, scripts and fencing
// targets are rendered by name.
func TestRedactHidesTokensAndNamesConnections(t *testing.T) {
	names := map[int64]string{7: "worker-a session"}
	got := redact([]string{"CLIENT", "KILL", "ID", "7", "ADDR", "127.0.0.1:5555"}, names)
	if want := "CLIENT KILL ID <id of worker-a session> ADDR <addr>"; got != want {
		t.Errorf("redact(fence) = %q, want %q", got, want)
	}
	tok := strings.Repeat("ab", 16)
	got = redact([]string{"SET", "k", tok, "IFEQ", tok, "PX", "100"}, names)
	if want := "SET k <token> IFEQ <token> PX 100"; got != want {
		t.Errorf("redact(extend) = %q, want %q", got, want)
	}
}

// TestDemoStopsWhenItsContextEnds: an expired budget fails the demo, the
// story and the wire transcripts, instead of hanging it.
func TestDemoStopsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if err := runStory(ctx, &bytes.Buffer{}); err == nil {
		t.Fatal("runStory succeeded with an expired context")
	}
	if err := runWire(ctx, &bytes.Buffer{}); err == nil {
		t.Fatal("runWire succeeded with an expired context")
	}
}

// TestDemoNeedsNothingInstalled_PausedHolderWriteIsRefused: on every
// profile the paused scene tells the same story, line for line: a holder
// paused past its lease (the server's clock moved instead) comes back after
// another owner took the lock with the next fencing token, and the store
// refuses its write; its guarded write to a Redis hash is refused too, while
// the same write sent naively lands; the wire log shows the fencing-token
// and guarded-write scripts, named.
func TestDemoNeedsNothingInstalled_PausedHolderWriteIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testBudget)
	defer cancel()
	var buf bytes.Buffer
	if err := runWire(ctx, &buf); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	story := []string{
		`paused     worker-a Acquire("{invoice:42}:lease", "{invoice:42}:fence", 30s) → fencing token 1`,
		`worker-a lock.Context().Err() = <nil>: it holds the lock and is about to write … when it is paused`,
		`server clock +31s while worker-a is paused (GC, swap, SIGSTOP): its lease expired (PTTL: no key)`,
		`worker-b Acquire(the same keys) → fencing token 2; store.WriteIfNewer(2, "total=120") → accepted`,
		`worker-a resumes: store.WriteIfNewer(1, "total=100") → refused: token 1 < 2, the largest accepted`,
		`worker-b lock.Guard(ctx, HSET {invoice:42}:state total 120) → written`,
		`worker-a lock.Guard(ctx, HSET {invoice:42}:state total 100) → refused, nothing written (ErrOwnershipLost, guard-refused); state Lost`,
		`the hash keeps total=120; the same write sent naively by worker-a:`,
		`worker-a HSET {invoice:42}:state total 100 → <nil>: total=100, worker-b's write overwritten`,
		`the store keeps "total=120" (token 2); worker-a Release → NotOwned, worker-b Release → Released`,
	}
	wire := []string{
		`worker-a session 2 EVALSHA <fenced acquire sha1> 2 {invoice:42}:lease {invoice:42}:fence <token> 30000`,
		`worker-a session 2 EVAL <fenced acquire script> 2 {invoice:42}:lease {invoice:42}:fence <token> 30000`,
		`worker-b session   EVALSHA <fenced acquire sha1> 2 {invoice:42}:lease {invoice:42}:fence <token> 30000`,
		`worker-a session 2 EVALSHA <guarded write sha1> 4 {invoice:42}:lease {invoice:42}:lease:guard {invoice:42}:fence:guarded {invoice:42}:state <token> <token> 1 30000 1 4 HSET {invoice:42}:state total 100`,
		`worker-a           HSET {invoice:42}:state total 100`,
	}
	for _, profile := range sim.Profiles {
		part := section(t, buf.String(), profile)
		lines := map[string]bool{}
		for _, line := range strings.Split(part, "\n") {
			line = strings.TrimSpace(line)
			lines[line] = true
			lines[strings.TrimSpace(strings.TrimPrefix(line, "│"))] = true
		}
		for _, want := range append(story, wire...) {
			if !lines[want] {
				t.Errorf("%s section lacks the line %q:\n%s", profile, want, part)
			}
		}
	}
}
