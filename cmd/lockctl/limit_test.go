package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/wire"
	"github.com/respire-go/respire/lease"
)

// TestLockctlRunLimit_AtMostNCommandsAtOnce: five 'lockctl run --limit 2'
// on one KEY (separate processes, waiting) run their CMDs, never more than
// two at once; each CMD sees RESPIRE_LOCK_LIMIT; a run with another limit
// while permits are held is refused with its own status (78), CMD not run;
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
		held, release := filepath.Join(dir, "held"), filepath.Join(dir, "release")
		holder := start(t, tg.env(), append(tg.conn(), "run", "--key", key, "--limit", "2", "--ttl", "5s",
			"--", "sh", "-c", `echo started > "$1"; while [ ! -e "$2" ]; do sleep 0.05; done`, "sh", held, release)...)
		eventually(t, 10*time.Second, "the first permit's CMD to start", fileHas(held, "started"))
		ran := filepath.Join(dir, "mismatch")
		code, _, stderr := runCLI(t, tg.env(), append(tg.conn(), "run", "--key", key, "--limit", "3",
			"--", "sh", "-c", `echo ran > "$1"`, "sh", ran)...)
		if code != exitLimitDiffers || !strings.Contains(stderr, "limit") {
			t.Fatalf("another limit while a permit is held: exit %d, stderr %q; want %d naming the limit", code, stderr, exitLimitDiffers)
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
				"--wait", patience.String(), "--", "sh", "-c", script, "sh", strconv.Itoa(i), runs)...))
		}
		if err := os.WriteFile(release, nil, 0o600); err != nil { // the holder's CMD ends once the others are started
			t.Fatal(err)
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
		n, err := tg.client.Do(context.Background(), tg.client.B().Exists().Key("{"+key+"}:sem").Build()).AsInt64()
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

// TestLockctlStatusSemaphore_CountsLivePermits: 'lockctl status --semaphore
// KEY' of a semaphore that 'lockctl run --limit' uses prints its live
// permits and the limit stored with them, no token, and exits 0; with no
// live permit it prints so and exits 1, as
// a free KEY does; --show-token with it is refused before anything is sent.
func TestLockctlStatusSemaphore_CountsLivePermits(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key, free := uniqueKey(t, "semstatus"), uniqueKey(t, "semfree")
		locks, err := lease.New(wire.New(wire.Options{Addrs: []string{tg.addr}, Password: tg.password}))
		if err != nil {
			t.Fatal(err)
		}
		defer locks.Close()
		ctx := context.Background()
		sem := locks.Semaphore(key, 3)
		for range 2 {
			p, err := sem.Acquire(ctx, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Release(ctx) //nolint:errcheck // clean-up
		}
		code, stdout, stderr := runCLI(t, tg.env(), append(tg.conn(), "status", "--semaphore", key, "--semaphore", free)...)
		want := key + ": semaphore, 2 live permits (limit 3)\n" + free + ": semaphore, no live permit\n"
		if code != exitNotHeld || stdout != want || stderr != "" {
			t.Fatalf("status of a semaphore with two permits and of an unused one: exit %d, stdout %q, stderr %q; want 1, %q",
				code, stdout, stderr, want)
		}
		if code, stdout, _ := runCLI(t, tg.env(), append(tg.conn(), "status", "-q", "--semaphore", key)...); code != 0 || stdout != "" {
			t.Fatalf("status -q of a semaphore with live permits: exit %d, %q; want 0 and nothing printed", code, stdout)
		}
		code, _, stderr = runCLI(t, tg.env(), append(tg.conn(), "status", "--show-token", "--semaphore", key)...)
		if code != exitUsage || !strings.Contains(stderr, "--show-token") {
			t.Fatalf("--show-token with --semaphore: exit %d, stderr %q; want %d naming --show-token", code, stderr, exitUsage)
		}
	})
}

// TestLockctlStatusSemaphore_BadNameIsAUsageError: a semaphore name whose
// keys could not share a hash tag is refused with the usage status, naming
// the name's fault, before anything is sent.
func TestLockctlStatusSemaphore_BadNameIsAUsageError(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, cleanEnv(), "--addr", "127.0.0.1:1", "status", "--semaphore", "}jobs")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "empty hash tag") {
		t.Fatalf("status --semaphore '}jobs': exit %d, stdout %q, stderr %q; want %d naming the invalid name", code, stdout, stderr, exitUsage)
	}
}
