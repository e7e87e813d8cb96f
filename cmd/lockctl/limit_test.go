package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLockctlRunLimit_AtMostNCommandsAtOnce: five 'lockctl run --limit 2'
// on one KEY (separate processes, waiting) run their CMDs, never more than
// two at once; each CMD sees RESPIRE_LOCK_LIMIT; a run with another limit
// while permits are held is refused with the usage status, CMD not run;
// when all are done the semaphore's keys are gone.
func TestLockctlRunLimit_AtMostNCommandsAtOnce(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key := uniqueKey(t, "limit")
		dir := t.TempDir()
		// Each CMD marks itself running, records how many are running, holds a
		// while, and unmarks itself.
		script := `touch "$2/run.$1"; ls "$2" | grep -c '^run\.' >> "$2/counts"; echo "$RESPIRE_LOCK_LIMIT" >> "$2/limits"; ` +
			`sleep 0.3; rm "$2/run.$1"`
		held := filepath.Join(dir, "held")
		holder := start(t, tg.env(), append(tg.conn(), "run", "--key", key, "--limit", "2", "--ttl", "5s",
			"--", "sh", "-c", `echo started > "$1"; sleep 1`, "sh", held)...)
		eventually(t, 10*time.Second, "the first permit's CMD to start", fileHas(held, "started"))
		ran := filepath.Join(dir, "mismatch")
		code, _, stderr := runCLI(t, tg.env(), append(tg.conn(), "run", "--key", key, "--limit", "3",
			"--", "sh", "-c", `echo ran > "$1"`, "sh", ran)...)
		if code != exitUsage || !strings.Contains(stderr, "limit") {
			t.Fatalf("another limit while a permit is held: exit %d, stderr %q; want %d naming the limit", code, stderr, exitUsage)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatal("CMD ran under a mismatched limit")
		}
		runs := filepath.Join(dir, "runs")
		if err := os.Mkdir(runs, 0o755); err != nil {
			t.Fatal(err)
		}
		var procs []*proc
		for i := range 5 {
			procs = append(procs, start(t, tg.env(), append(tg.conn(), "run", "--key", key, "--limit", "2", "--ttl", "5s",
				"--wait", "30s", "--", "sh", "-c", script, "sh", strconv.Itoa(i), runs)...))
		}
		for _, p := range append(procs, holder) {
			if code := p.wait(t, 40*time.Second); code != 0 {
				t.Fatalf("exit status %d; stderr: %s", code, p.stderr.String())
			}
		}
		counts := lines(t, filepath.Join(runs, "counts"))
		if len(counts) != 5 {
			t.Fatalf("%d CMDs ran; want 5", len(counts))
		}
		most := 0
		for _, c := range counts {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil {
				t.Fatalf("count %q", c)
			}
			most = max(most, n)
		}
		if most > 2 {
			t.Fatalf("%d CMDs ran at once (counts %v); want at most 2", most, counts)
		}
		t.Logf("at most %d CMDs ran at once", most)
		for _, l := range lines(t, filepath.Join(runs, "limits")) {
			if l != "2" {
				t.Fatalf("RESPIRE_LOCK_LIMIT=%q; want 2", l)
			}
		}
		n, err := tg.client.Do(context.Background(), tg.client.B().Exists().Key("{"+key+"}:sem", "{"+key+"}:sem:limit").Build()).AsInt64()
		if err != nil || n != 0 {
			t.Fatalf("the semaphore's keys after every run: %d exist (%v); want none", n, err)
		}
	})
}

// lines reads a file's lines.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}
