package main

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// forwarded are the signals lockctl passes on to CMD's process group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2}

// child is CMD, running in a process group apart from lockctl's (the
// guard's, or its own), so that it and everything it starts can be
// signalled together.
type child struct {
	cmd  *exec.Cmd
	pid  int
	pgid int
	tty  *terminal // the terminal handed to CMD's group, nil if none; only the supervisor touches it
	// stops is signalled (without blocking, so it may coalesce) whenever
	// CMD stops; stopSig is the signal that stopped it, 0 while it runs.
	stops   chan struct{}
	stopSig atomic.Int32
	done    chan struct{}      // closed once CMD has been waited for (ws is set)
	ws      syscall.WaitStatus // how CMD ended, once done is closed
	waitErr error              // the wait failed (then status is 70)
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
// extra environment variables in process group pgid (the guard's), or a
// new group of its own when pgid is 0, with a parent-death signal where
// the system has one (see childAttr). When lockctl's group is the
// terminal's foreground group, CMD's group takes its place before CMD runs
// (so CMD can read the terminal, and Ctrl-C reaches it directly) until CMD
// exits or stops. From then on lockctl ignores SIGTTOU: neither a write to
// the terminal nor taking it back ever stops lockctl (the ignore is not
// inherited by CMD, which is already running).
func startChild(name, path string, args, extraEnv []string, pgid int) (*child, error) {
	tty := foregroundTerminal()
	c, err := tryStart(name, path, args, extraEnv, pgid, tty)
	if err != nil && tty != nil { // the terminal could not be handed over: run without it
		tty = nil
		c, err = tryStart(name, path, args, extraEnv, pgid, nil)
	}
	if err != nil {
		return nil, failf(exitCannotExec, "%s: %v", name, unwrapExec(err))
	}
	signal.Ignore(syscall.SIGTTOU)
	c.tty = tty
	return c, nil
}

// tryStart starts CMD as startChild says; with tty, the child makes its
// group the terminal's foreground group itself, between fork and exec.
func tryStart(name, path string, args, extraEnv []string, pgid int, tty *terminal) (*child, error) {
	cmd := exec.Command(path, args...)
	cmd.Args[0] = name
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.SysProcAttr = childAttr()
	cmd.SysProcAttr.Pgid = pgid
	if tty != nil {
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, tty.fd
	}
	c := &child{cmd: cmd, pgid: pgid, stops: make(chan struct{}, 1), done: make(chan struct{})}
	started := make(chan error, 1)
	go c.run(started)
	return c, <-started
}

// run starts CMD and waits for it, on one OS thread locked for CMD's whole
// life: Linux sends the parent-death signal when the thread that started
// the child ends, not the process, so that thread must outlive CMD.
func (c *child) run(started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.cmd.Start(); err != nil {
		started <- err
		return
	}
	c.pid = c.cmd.Process.Pid // read here: wait's Release changes it
	if c.pgid == 0 {
		c.pgid = c.pid
	}
	started <- nil
	c.wait()
}

// wait reaps CMD, noting every stop and continue on the way (os/exec's
// Wait reports only the end), then closes done.
func (c *child) wait() {
	defer close(c.done)
	defer func() { _ = c.cmd.Process.Release() }()
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(c.pid, &ws, syscall.WUNTRACED|syscall.WCONTINUED, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			c.waitErr = err
			return
		case ws.Stopped():
			c.stopSig.Store(int32(ws.StopSignal()))
			select {
			case c.stops <- struct{}{}:
			default:
			}
		case ws.Continued():
			c.stopSig.Store(0)
		default:
			c.ws = ws
			return
		}
	}
}

// stopSignal is the signal that stopped CMD, or 0 while it runs.
func (c *child) stopSignal() syscall.Signal { return syscall.Signal(c.stopSig.Load()) }

// reclaimTerminal takes the terminal back from CMD's group, if it was
// handed to it.
func (c *child) reclaimTerminal() {
	c.tty.reclaim()
	c.tty = nil
}

// resume continues CMD's group, first handing it the terminal when
// lockctl's group is (again) the terminal's foreground group: after `fg`,
// not after `bg`.
func (c *child) resume() {
	if t := foregroundTerminal(); t != nil && t.handTo(c.pgid) {
		c.tty = t
	}
	c.signal(syscall.SIGCONT)
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
	switch {
	case c.waitErr != nil:
		return exitSoftware
	case c.ws.Signaled():
		return exitSignalBase + int(c.ws.Signal())
	}
	return c.ws.ExitStatus()
}

// signalStatus is lockctl's own status for ending on sig: 128+N.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return exitSignalBase + int(s)
	}
	return exitSignalBase + int(syscall.SIGINT)
}
