package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockctlOneKeyOneKind_PlainAndSemaphoreRunsRefuseEachOther: while
// 'lockctl run --limit 1 --key K' holds a permit, 'lockctl run --key K'
// (and 'run --fenced C --key K') is refused with its own status (65), a
// message naming the semaphore, and its CMD never runs; while a plain run
// holds K, 'run --limit 2 --key K' is refused the same way; the holder's
// CMD runs on undisturbed, and K is free for either kind once it is done.
func TestLockctlOneKeyOneKind_PlainAndSemaphoreRunsRefuseEachOther(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		dir := t.TempDir()
		for _, tc := range []struct {
			name           string
			holder, second []string
			want           string
		}{
			{"plain-beside-a-permit", []string{"--limit", "1"}, nil, "semaphore"},
			{"fenced-beside-a-permit", []string{"--limit", "1"}, []string{"--fenced", uniqueKey(t, "fence")}, "semaphore"},
			{"permit-beside-a-plain-lock", nil, []string{"--limit", "2"}, "plain lock"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				key := uniqueKey(t, "onekey")
				held, ran := filepath.Join(dir, tc.name+".held"), filepath.Join(dir, tc.name+".ran")
				release := filepath.Join(dir, tc.name+".release")
				args := append(append(append(tg.conn(), "run", "--key", key), tc.holder...),
					"--", "sh", "-c", `echo started > "$1"; while [ ! -e "$2" ]; do sleep 0.05; done`, "sh", held, release)
				holder := start(t, tg.env(), args...)
				eventually(t, 10*time.Second, "the holder's CMD to start", fileHas(held, "started"))
				args = append(append(append(tg.conn(), "run", "--key", key), tc.second...),
					"--", "sh", "-c", `echo ran > "$1"`, "sh", ran)
				code, _, stderr := runCLI(t, tg.env(), args...)
				if code != exitOtherKind || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
					t.Fatalf("a second run on %s: exit %d, stderr %q; want %d naming the %s", key, code, stderr, exitOtherKind, tc.want)
				}
				if _, err := os.Stat(ran); err == nil {
					t.Fatal("the second run's CMD ran beside the holder's")
				}
				if err := os.WriteFile(release, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if code := holder.wait(t, 20*time.Second); code != 0 {
					t.Fatalf("the holder exited %d: %s", code, holder.stderr.String())
				}
				if code, _, stderr := runCLI(t, tg.env(), args...); code != 0 {
					t.Fatalf("the second run once the holder is done: exit %d, %q", code, stderr)
				}
				if len(tc.second) > 1 && tc.second[0] == "--fenced" {
					tg.do(t, tg.client.B().Del().Key(tc.second[1]).Build())
				}
			})
		}
	})
}

// TestLockctlOneKeyOneKind_StatusSeesAPermit: 'lockctl status KEY' of a
// KEY whose semaphore has a live permit ('run --limit') says so, with the
// count and the limit, and exits 0, so 'lockctl status -q KEY && ...' runs
// while KEY is in use by either kind; a KEY free of both still exits 1.
func TestLockctlOneKeyOneKind_StatusSeesAPermit(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key, free := uniqueKey(t, "onekeystatus"), uniqueKey(t, "onekeyfree")
		dir := t.TempDir()
		held, release := filepath.Join(dir, "held"), filepath.Join(dir, "release")
		holder := start(t, tg.env(), append(tg.conn(), "run", "--limit", "3", "--key", key, "--",
			"sh", "-c", `echo started > "$1"; while [ ! -e "$2" ]; do sleep 0.05; done`, "sh", held, release)...)
		eventually(t, 10*time.Second, "the permit's CMD to start", fileHas(held, "started"))
		code, stdout, stderr := runCLI(t, tg.env(), append(tg.conn(), "status", key)...)
		if want := key + ": semaphore, 1 live permit (limit 3)\n"; code != 0 || stdout != want || stderr != "" {
			t.Fatalf("status of a KEY with a live permit: exit %d, %q, %q; want 0 and %q", code, stdout, stderr, want)
		}
		if code, stdout, _ := runCLI(t, tg.env(), append(tg.conn(), "status", "-q", key)...); code != 0 || stdout != "" {
			t.Fatalf("status -q of a KEY with a live permit: exit %d, %q; want 0, nothing printed", code, stdout)
		}
		if code, stdout, _ := runCLI(t, tg.env(), append(tg.conn(), "status", free)...); code != exitNotHeld || stdout != free+": no owner\n" {
			t.Fatalf("status of a free KEY: exit %d, %q; want 1, no owner", code, stdout)
		}
		if err := os.WriteFile(release, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if code := holder.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("the permit's run exited %d: %s", code, holder.stderr.String())
		}
	})
}

// TestLockctlRunLimit_ZeroAndOutOfRangeAreUsageErrors: --limit 0 (which
// used to run a plain lock) and limits outside 1 to 1,000,000 are usage
// errors (64) naming the range; CMD never runs and nothing is sent.
func TestLockctlRunLimit_ZeroAndOutOfRangeAreUsageErrors(t *testing.T) {
	t.Parallel()
	ran := filepath.Join(t.TempDir(), "ran")
	for _, limit := range []string{"0", "-1", "1000001"} {
		code, stdout, stderr := runCLI(t, cleanEnv(), "--addr", closedPort(t), "run", "--limit", limit, "--key", "k",
			"--", "sh", "-c", `echo ran > "$1"`, "sh", ran)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "between 1 and 1000000") {
			t.Errorf("--limit %s: exit %d, stderr %q; want %d naming the range", limit, code, stderr, exitUsage)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("CMD ran with a bad --limit")
	}
}
