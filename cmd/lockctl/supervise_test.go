package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLockctlSignalsBeforeWriting_BrokenPipes: with lockctl's stdout and
// stderr broken pipes (their readers gone), a loss still ends CMD — its
// SIGTERM trap runs — and lockctl exits 76 instead of dying of SIGPIPE on
// the "lost" line, as it did when it wrote before signalling.
func TestLockctlSignalsBeforeWriting_BrokenPipes(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key := uniqueKey(t, "pipe")
		dir := t.TempDir()
		started, term := filepath.Join(dir, "started"), filepath.Join(dir, "term")
		script := `trap 'echo term > "$2"; exit 143' TERM; echo started > "$1"; sleep 30 & wait`
		var writers []*os.File
		p := startWith(t, tg.env(), func(cmd *exec.Cmd) {
			cmd.Stdout, cmd.Stderr = brokenPipe(t), brokenPipe(t)
			writers = append(writers, cmd.Stdout.(*os.File), cmd.Stderr.(*os.File))
		}, append(tg.conn(), "run", "--key", key, "--ttl", "1s", "--", "sh", "-c", script, "sh", started, term)...)
		for _, w := range writers {
			w.Close() // lockctl and CMD hold the only write ends
		}
		eventually(t, 10*time.Second, "CMD to start", fileHas(started, "started"))

		tg.do(t, tg.client.B().Set().Key(key).Value("thief").Px(time.Minute).Build())
		code := p.wait(t, 30*time.Second) // generous: a loaded CI machine; the loss itself is seen at once
		if ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
			t.Fatalf("lockctl died of %v after the loss; want exit %d", ws.Signal(), exitLost)
		}
		if code != exitLost {
			t.Fatalf("exit status %d, want %d (lost)", code, exitLost)
		}
		eventually(t, 5*time.Second, "CMD's SIGTERM trap to run", fileHas(term, "term"))
		if v, _ := tg.get(t, key); v != "thief" {
			t.Errorf("key holds %q after lockctl exited; want the thief's lock untouched", v)
		}
	})
}

// brokenPipe returns the write end of a pipe whose read end is closed: a
// write to it raises SIGPIPE (or fails with EPIPE).
func brokenPipe(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	t.Cleanup(func() { w.Close() })
	return w
}

// TestLockctlChildDiesWithIt_KillNine: kill -9 of lockctl ends CMD and
// what CMD started in its process group (the guard's work) at once, long
// before the lease could expire and another owner take it. With the guard
// killed first, CMD's parent-death signal alone still ends CMD (Linux).
func TestLockctlChildDiesWithIt_KillNine(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		for _, tc := range []struct {
			name      string
			guardToo  bool // kill the guard first: only the parent-death signal is left
			wantBgEnd bool
		}{{"guard-and-pdeathsig", false, true}, {"pdeathsig-alone", true, false}} {
			t.Run(tc.name, func(t *testing.T) {
				key := uniqueKey(t, "kill9")
				started := filepath.Join(t.TempDir(), "started")
				script := `sleep 30 & echo $! > "$1.bg"; echo $$ > "$1"; wait`
				p := startWith(t, tg.env(), func(cmd *exec.Cmd) {
					cmd.Stdout, cmd.Stderr = nil, nil // no pipe for the test to wait on while CMD lives
				}, append(tg.conn(), "run", "--key", key, "--ttl", "30s", "--", "sh", "-c", script, "sh", started)...)
				cmdPid, bg := readPid(t, started), readPid(t, started+".bg")
				t.Cleanup(func() { killIfRunning(bg, "sleep") }) // it outlives CMD without the guard
				if tc.guardToo {
					guard := pidGroup(cmdPid)
					if guard == cmdPid || guard == p.cmd.Process.Pid {
						t.Fatalf("CMD's process group %d is not led by a guard", guard)
					}
					_ = syscall.Kill(guard, syscall.SIGKILL)
					eventually(t, 5*time.Second, "the guard to die", func() bool { return processGone(guard) })
				}

				if err := p.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				<-p.done
				killed := time.Now()
				eventually(t, 5*time.Second, "CMD to die with lockctl", func() bool { return processGone(cmdPid) })
				if tc.wantBgEnd {
					eventually(t, 5*time.Second, "CMD's background process to die with lockctl",
						func() bool { return processGone(bg) })
				}
				if _, found := tg.get(t, key); !found {
					t.Fatalf("the lease was gone before CMD died (%v after the kill): another owner could have acquired",
						time.Since(killed))
				}
			})
		}
	})
}

// TestLockctlJobControl_SigtstpStopsCMDThenLockctl: SIGTSTP to lockctl
// stops CMD's group, then lockctl; SIGCONT to lockctl's group (what fg and
// bg send) resumes both while the lease lasts, and Ctrl-C then works; a
// SIGINT sent while the job is stopped, with SIGCONT (what the shell's
// kill %1 does), ends it too.
func TestLockctlJobControl_SigtstpStopsCMDThenLockctl(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		for _, whileStopped := range []bool{false, true} {
			key := uniqueKey(t, "tstp")
			started := filepath.Join(t.TempDir(), "started")
			p := startWith(t, tg.env(), ownGroup, append(tg.conn(), "run", "--key", key, "--ttl", "30s",
				"--", "sh", "-c", `echo $$ > "$1"; exec sleep 30`, "sh", started)...)
			cmdPid, lockctl := readPid(t, started), p.cmd.Process.Pid

			_ = syscall.Kill(lockctl, syscall.SIGTSTP)
			eventually(t, 5*time.Second, "CMD to stop", stoppedState(cmdPid))
			eventually(t, 5*time.Second, "lockctl to stop after CMD", stoppedState(lockctl))
			if whileStopped {
				_ = syscall.Kill(lockctl, syscall.SIGINT)
				_ = syscall.Kill(-lockctl, syscall.SIGCONT)
			} else {
				_ = syscall.Kill(-lockctl, syscall.SIGCONT) // fg: the job's group
				eventually(t, 5*time.Second, "lockctl to resume", runningState(lockctl))
				eventually(t, 5*time.Second, "CMD to resume", runningState(cmdPid))
				if _, found := tg.get(t, key); !found {
					t.Fatal("the key is not held after a resume within the lease")
				}
				_ = syscall.Kill(lockctl, syscall.SIGINT)
			}
			if code := p.wait(t, 10*time.Second); code != exitSignalBase+int(syscall.SIGINT) {
				t.Fatalf("interrupted while stopped %v: exit status %d, want 130; stderr: %s",
					whileStopped, code, p.stderr.String())
			}
			if _, found := tg.get(t, key); found {
				t.Errorf("interrupted while stopped %v: the key is still held: not released", whileStopped)
			}
		}
	})
}

// ownGroup starts lockctl in a process group of its own, as a shell with
// job control starts a job (lockctl stops its group on a job stop).
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// TestLockctlJobControl_StoppedPastTheLeaseIsALoss: a job stopped longer
// than its lease renews nothing, so the key expires and another owner may
// take it; when the job is continued, CMD does not run on: it gets
// SIGTERM, and lockctl exits 76 leaving the new owner's key alone.
func TestLockctlJobControl_StoppedPastTheLeaseIsALoss(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key := uniqueKey(t, "tstp-expired")
		started := filepath.Join(t.TempDir(), "started")
		p := startWith(t, tg.env(), ownGroup, append(tg.conn(), "run", "--key", key, "--ttl", "2s",
			"--", "sh", "-c", `echo $$ > "$1"; exec sleep 30`, "sh", started)...)
		cmdPid, lockctl := readPid(t, started), p.cmd.Process.Pid

		_ = syscall.Kill(lockctl, syscall.SIGTSTP)
		eventually(t, 5*time.Second, "CMD to stop", stoppedState(cmdPid))
		eventually(t, 5*time.Second, "lockctl to stop after CMD", stoppedState(lockctl))
		eventually(t, 10*time.Second, "the stopped job's lease to expire", func() bool {
			_, found := tg.get(t, key)
			return !found
		})
		tg.do(t, tg.client.B().Set().Key(key).Value("next-owner").Px(time.Minute).Build())

		_ = syscall.Kill(-lockctl, syscall.SIGCONT)
		if code := p.wait(t, 10*time.Second); code != exitLost {
			t.Fatalf("exit status %d, want %d (lost); stderr: %s", code, exitLost, p.stderr.String())
		}
		if !strings.Contains(p.stderr.String(), "lost "+key) {
			t.Errorf("stderr %q does not report the loss", p.stderr.String())
		}
		eventually(t, 2*time.Second, "CMD to be terminated", func() bool { return processGone(cmdPid) })
		if v, _ := tg.get(t, key); v != "next-owner" {
			t.Errorf("key holds %q; want the next owner's lock untouched", v)
		}
	})
}
