package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// holdScript starts a background sleep in CMD's group, records its pid in
// "$1.bg", then writes "started" to "$1" and waits. With ignoreTerm, the
// shell and the sleep ignore SIGTERM, so only SIGKILL ends them.
func holdScript(ignoreTerm bool) string {
	s := `sleep 30 & echo $! > "$1.bg"; echo started > "$1"; wait`
	if ignoreTerm {
		s = `trap "" TERM; ` + s
	}
	return s
}

// TestRunStolenLockKillsCommand: when another owner takes the key while CMD
// runs, the next renewal finds it; CMD's whole process group gets SIGTERM
// (and SIGKILL after --grace when it ignores SIGTERM), lockctl exits 76 and
// leaves the new owner's key alone.
func TestRunStolenLockKillsCommand(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		for _, tc := range []struct {
			name       string
			ignoreTerm bool
			grace      string
		}{{"sigterm", false, patience.String()}, {"sigkill-after-grace", true, "300ms"}} {
			t.Run(tc.name, func(t *testing.T) {
				key := uniqueKey(t, "stolen")
				started := filepath.Join(t.TempDir(), "started")
				p := start(t, tg.env(), append(tg.conn(), "run", "--key", key, "--ttl", "1s", "--grace", tc.grace,
					"--", "sh", "-c", holdScript(tc.ignoreTerm), "sh", started)...)
				eventually(t, 10*time.Second, "CMD to start", fileHas(started, "started"))
				bg := readPid(t, started+".bg")

				tg.do(t, tg.client.B().Set().Key(key).Value("thief").Px(time.Minute).Build())
				began := time.Now()
				if code := p.wait(t, 8*time.Second); code != exitLost {
					t.Fatalf("exit status %d, want %d (lost); stderr: %s", code, exitLost, p.stderr.String())
				}
				// A CMD that ignored SIGTERM would be killed after the grace
				// (patience): half of it tells the two apart on a loaded machine.
				if took := time.Since(began); !tc.ignoreTerm && took > patience/2 {
					t.Errorf("lockctl took %v after the theft: SIGTERM did not end CMD", took)
				}
				if !strings.Contains(p.stderr.String(), "lost "+key) {
					t.Errorf("stderr %q does not report the loss", p.stderr.String())
				}
				eventually(t, 2*time.Second, "CMD's background process to be killed", func() bool { return processGone(bg) })
				if v, _ := tg.get(t, key); v != "thief" {
					t.Errorf("key holds %q after lockctl exited; want the thief's lock untouched", v)
				}
			})
		}
	})
}

// readPid reads a pid CMD wrote.
func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, 5*time.Second, "the pid file", func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// TestRunNeverOverlaps: three `lockctl run` on one key, started together,
// run their commands one after the other: the start and end markers each
// CMD appends never interleave.
func TestRunNeverOverlaps(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key := uniqueKey(t, "overlap")
		marks := filepath.Join(t.TempDir(), "marks")
		script := `echo "start $1" >> "$2"; sleep 0.2; echo "end $1" >> "$2"`
		var procs []*proc
		for i := range 3 {
			procs = append(procs, start(t, tg.env(), append(tg.conn(), "run", "--key", key, "--ttl", "5s",
				"--wait", patience.String(), "--", "sh", "-c", script, "sh", strconv.Itoa(i), marks)...))
		}
		for _, p := range procs {
			if code := p.wait(t, 20*time.Second); code != 0 {
				t.Fatalf("exit status %d; stderr: %s", code, p.stderr.String())
			}
		}
		b, err := os.ReadFile(marks)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 6 {
			t.Fatalf("markers %q; want 3 start/end pairs", lines)
		}
		seen := map[string]bool{}
		for i := 0; i < len(lines); i += 2 {
			id, ok := strings.CutPrefix(lines[i], "start ")
			if !ok || lines[i+1] != "end "+id || seen[id] {
				t.Fatalf("markers interleave: %q", lines)
			}
			seen[id] = true
		}
		if _, found := tg.get(t, key); found {
			t.Error("the key is still held after every run ended")
		}
	})
}

// TestRunInterruptReleases: SIGINT to lockctl (Ctrl-C) reaches CMD's group;
// lockctl waits for CMD, releases the key and exits 130 (CMD's status).
func TestRunInterruptReleases(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key := uniqueKey(t, "interrupt")
		started := filepath.Join(t.TempDir(), "started")
		p := start(t, tg.env(), append(tg.conn(), "run", "--key", key, "--ttl", "30s",
			"--", "sh", "-c", `echo started > "$1"; exec sleep 30`, "sh", started)...)
		eventually(t, 10*time.Second, "CMD to start", fileHas(started, "started"))
		if _, found := tg.get(t, key); !found {
			t.Fatal("the key is not held while CMD runs")
		}
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 10*time.Second); code != exitSignalBase+int(syscall.SIGINT) {
			t.Fatalf("exit status %d, want 130; stderr: %s", code, p.stderr.String())
		}
		if _, found := tg.get(t, key); found {
			t.Error("the key is still held after Ctrl-C: not released")
		}
	})
}

// TestRunNotAcquired: a key held by another owner for the whole --wait
// gives exit 75, one line on stderr, and CMD never runs.
func TestRunNotAcquired(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key := uniqueKey(t, "busy")
		tg.do(t, tg.client.B().Set().Key(key).Value("other").Px(time.Minute).Build())
		ran := filepath.Join(t.TempDir(), "ran")
		code, stdout, stderr := runCLI(t, tg.env(), append(tg.conn(), "run", "--key", key, "--wait", "300ms",
			"--", "sh", "-c", `echo ran > "$1"`, "sh", ran)...)
		if code != exitNotAcquired || stdout != "" || strings.Count(stderr, "\n") != 1 {
			t.Fatalf("exit %d, stdout %q, stderr %q; want 75 and one line", code, stdout, stderr)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Error("CMD ran without the lock")
		}
	})
}

// TestRunFencedPassesIncreasingTokens: with --fenced, CMD sees the lock's
// fencing token, larger on every acquisition, and status shows the counter.
func TestRunFencedPassesIncreasingTokens(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key, counter := uniqueKey(t, "fenced"), uniqueKey(t, "fence")
		out := filepath.Join(t.TempDir(), "tokens")
		for range 2 {
			code, _, stderr := runCLI(t, tg.env(), append(tg.conn(), "run", "--key", key, "--fenced", counter,
				"--", "sh", "-c", `echo "$RESPIRE_FENCING_TOKEN" >> "$1"`, "sh", out)...)
			if code != 0 {
				t.Fatalf("exit %d; stderr %q", code, stderr)
			}
		}
		b, _ := os.ReadFile(out)
		if got := strings.Fields(string(b)); len(got) != 2 || got[0] != "1" || got[1] != "2" {
			t.Fatalf("fencing tokens %q; want 1 then 2", got)
		}
		_, stdout, _ := runCLI(t, tg.env(), append(tg.conn(), "status", "--fenced", counter, key)...)
		if want := counter + ": fencing counter 2"; !strings.Contains(stdout, want) {
			t.Errorf("status printed %q; want a line %q", stdout, want)
		}
	})
}

// TestRunSimFlagPassesStatusAndEnvironment: `--sim PROFILE` needs nothing
// installed; CMD sees RESPIRE_LOCK_KEY; lockctl exits with CMD's status
// (128+N for a signal), 127 when CMD does not exist.
func TestRunSimFlagPassesStatusAndEnvironment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		script string
		want   int
	}{
		{`test "$RESPIRE_LOCK_KEY" = demo && test -z "$RESPIRE_FENCING_TOKEN" || exit 9; exit 3`, 3},
		{`kill -TERM $$`, exitSignalBase + int(syscall.SIGTERM)},
	} {
		code, _, stderr := runCLI(t, nil, "--sim", "redis-8.4", "run", "--key", "demo", "--", "sh", "-c", tc.script)
		if code != tc.want || stderr != "" {
			t.Errorf("%q: exit %d, stderr %q; want %d", tc.script, code, stderr, tc.want)
		}
	}
	code, _, stderr := runCLI(t, nil, "run", "--sim", "valkey-9.0", "--key", "demo", "--", "no-such-command-lockctl")
	if code != exitNotFound || strings.Count(stderr, "\n") != 1 {
		t.Errorf("missing CMD: exit %d, stderr %q; want 127 and one line", code, stderr)
	}
}

// TestRunInterruptWhileWaiting: Ctrl-C while lockctl waits for a held key
// ends it with 130 and CMD never runs.
func TestRunInterruptWhileWaiting(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Valkey90})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Exec("SET", "busy", "other", "PX", "60000")
	ran := filepath.Join(t.TempDir(), "ran")
	p := start(t, nil, "run", "--addr", srv.Addr(), "--key", "busy", "--wait", "20s",
		"--", "sh", "-c", `echo ran > "$1"`, "sh", ran)
	tries := 0
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, err := srv.WaitFor(ctx, func(e sim.Entry) bool {
		if strings.EqualFold(e.Args[0], "SET") && len(e.Args) > 1 && e.Args[1] == "busy" {
			tries++
		}
		return tries >= 2 // polling: the signal handler is installed
	}); err != nil {
		t.Fatalf("lockctl never tried the key twice: %v", err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t, 10*time.Second); code != exitSignalBase+int(syscall.SIGINT) {
		t.Fatalf("exit %d, want 130; stderr %q", code, p.stderr.String())
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("CMD ran without the lock")
	}
}

// TestRunGivesCMDTheTerminal: in the foreground of a terminal (a pty made
// by script(1)), CMD's process group gets the terminal while it runs, so
// CMD can read it instead of being stopped by SIGTTIN.
func TestRunGivesCMDTheTerminal(t *testing.T) {
	t.Parallel()
	scriptPath, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	inner := binary + ` --sim redis-7.0 run --key k -- sh -c 'read x; echo "got $x"; exit 4'`
	cmd := exec.CommandContext(ctx, scriptPath, "-qec", inner, "/dev/null")
	cmd.Env = cleanEnv()
	cmd.Stdin = strings.NewReader("hello\n")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("CMD did not get the terminal (hung); output %q", out)
	}
	if code := cmd.ProcessState.ExitCode(); code != 4 || !strings.Contains(string(out), "got hello") {
		t.Fatalf("exit %d (%v), output %q; want 4 and CMD's read", code, err, out)
	}
}
