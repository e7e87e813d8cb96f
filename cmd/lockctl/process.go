package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// forwarded are the signals lockctl passes on to CMD's process group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2}

// child is CMD, running in its own process group (its pid is the group's
// id), so that it and everything it starts can be signalled together.
type child struct {
	cmd  *exec.Cmd
	pgid int
	tty  *terminal     // the terminal handed to CMD's group, nil if none
	done chan struct{} // closed once CMD has been waited for (cmd.ProcessState is set)
}

// commandPath resolves CMD like a shell does, and says which exit status a
// failure deserves (127 not found, 126 not executable).
func commandPath(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return "", failf(exitNotFound, "%s: command not found", name)
	}
	return "", failf(exitCannotExec, "%s: %v", name, unwrapExec(err))
}

// unwrapExec drops exec's "exec: name:" prefix.
func unwrapExec(err error) error {
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}

// startChild starts CMD (argv[0] name, resolved to path) with args and the
// extra environment variables in a new process group. When lockctl's group
// is the terminal's foreground group, CMD's group takes its place (so CMD
// can read the terminal, and Ctrl-C reaches it directly) until CMD exits.
func startChild(name, path string, args, extraEnv []string) (*child, error) {
	cmd := exec.Command(path, args...)
	cmd.Args[0] = name
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	tty := foregroundTerminal()
	if err := cmd.Start(); err != nil {
		return nil, failf(exitCannotExec, "%s: %v", name, unwrapExec(err))
	}
	c := &child{cmd: cmd, pgid: cmd.Process.Pid, done: make(chan struct{})}
	if tty != nil && tty.handTo(c.pgid) {
		c.tty = tty
		c.signal(syscall.SIGCONT) // in case it read the terminal before it was its own
	}
	go func() {
		_ = cmd.Wait() // the status is read from cmd.ProcessState
		c.tty.reclaim()
		close(c.done)
	}()
	return c, nil
}

// signal sends sig to CMD's process group; a group that is gone is not an
// error.
func (c *child) signal(sig syscall.Signal) {
	_ = syscall.Kill(-c.pgid, sig)
}

// terminate sends sig and, for a signal that ends processes, SIGCONT, so
// that a group member stopped (SIGTSTP, SIGTTIN) acts on it.
func (c *child) terminate(sig syscall.Signal) {
	c.signal(sig)
	if sig != syscall.SIGKILL && sig != syscall.SIGCONT {
		c.signal(syscall.SIGCONT)
	}
}

// groupAlive reports whether a process of CMD's group still runs. Zombies
// (exited, not yet reaped by their new parent) do not count: where /proc
// can be read it is scanned for live members; elsewhere the group counts
// as alive while it can be signalled.
func (c *child) groupAlive() bool {
	if syscall.Kill(-c.pgid, 0) != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && liveMember(string(stat), c.pgid) {
			return true
		}
	}
	return false
}

// liveMember reports whether a /proc/PID/stat line ("pid (comm) state ppid
// pgrp ...") is of a process of group pgid that is not a zombie.
func liveMember(stat string, pgid int) bool {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return false
	}
	fields := strings.Fields(stat[i+1:])
	return len(fields) >= 3 && fields[0] != "Z" && fields[0] != "X" && fields[2] == strconv.Itoa(pgid)
}

// reapGroup, after a loss, waits until deadline for the rest of CMD's group
// to exit, then kills what is left.
func (c *child) reapGroup(deadline time.Time) {
	for c.groupAlive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if c.groupAlive() {
		c.signal(syscall.SIGKILL)
	}
}

// status is CMD's exit status as a shell reports it: its exit code, or
// 128+N when signal N ended it.
func (c *child) status() int {
	ps := c.cmd.ProcessState
	if ps == nil {
		return exitCannotExec
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signalStatus is lockctl's own status for ending on sig: 128+N.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return exitSignalBase + int(s)
	}
	return exitSignalBase + int(syscall.SIGINT)
}
