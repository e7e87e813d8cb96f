package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// The guard kills CMD's whole process group when lockctl dies without
// dismissing it (kill -9, a crash): CMD's parent-death signal (Linux) ends
// CMD itself, but not what CMD started — the pg_dump a backup.sh runs —
// and none of them may go on once nobody renews the lease.
//
// The guard is lockctl itself, started again with guardEnv set, as the
// leader of a new process group that CMD then joins (so CMD is never in a
// group the guard does not know, not even for its first instruction). It
// ignores every signal a terminal, a shell or lockctl's forwarding sends,
// and reads a pipe from lockctl: "done" dismisses it; the end of the pipe
// without it means lockctl is gone, and the guard sends SIGKILL to its
// group — CMD and everything CMD started that stayed in it. The end of a
// pipe is seen on every system, so outside Linux the guard is also what
// ends CMD itself. lockctl dismisses it as soon as CMD has exited.

// guardEnv, set to "1", makes lockctl run as the guard.
const guardEnv = "RESPIRE_LOCKCTL_GUARD"

// guard is a started guard; nil (a guard that could not start) ignores
// every call and leads no group.
type guard struct {
	cmd *exec.Cmd
	w   *os.File // the pipe to the guard's stdin; nil once dismissed
}

// startGuard starts the guard. It is started before CMD, so that it does
// not inherit the signals lockctl ignores once CMD runs.
func startGuard() (*guard, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot start the guard: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("cannot start the guard: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), guardEnv+"=1")
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("cannot start the guard: %w", err)
	}
	return &guard{cmd: cmd, w: w}, nil
}

// group is the process group the guard leads, for CMD to join; 0 without
// a guard.
func (g *guard) group() int {
	if g == nil {
		return 0
	}
	return g.cmd.Process.Pid
}

// dismiss tells the guard to exit without killing anything, and reaps it.
// Calls after the first do nothing.
func (g *guard) dismiss() {
	if g == nil || g.w == nil {
		return
	}
	_, _ = g.w.WriteString("done\n")
	_ = g.w.Close()
	g.w = nil
	_ = g.cmd.Wait()
}

// runGuard is the guard's main: see the top of this file.
func runGuard() int {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGTSTP,
		syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE, syscall.SIGUSR1, syscall.SIGUSR2)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "done" {
			return 0
		}
	}
	_ = syscall.Kill(0, syscall.SIGKILL) // its own group: CMD's
	return 0
}
