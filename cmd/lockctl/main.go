package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit statuses (see doc.go and usage). The sysexits.h names are given
// where one applies; each kind of failure has its own status, so that a
// script can tell contention from a loss, a usage error, an unreachable
// server and refused credentials.
const (
	exitOK           = 0
	exitNotHeld      = 1   // release: the key was not held by that token; status: a KEY has no owner
	exitUsage        = 64  // EX_USAGE: bad invocation (flags, arguments)
	exitOtherKind    = 65  // EX_DATAERR: run: KEY is in use as the other kind (a semaphore, or a plain lock)
	exitUnavailable  = 69  // EX_UNAVAILABLE: the server cannot be reached, or failed a command
	exitSoftware     = 70  // EX_SOFTWARE: a bug in lockctl
	exitNotAcquired  = 75  // EX_TEMPFAIL: another owner held the lock for the whole wait
	exitLost         = 76  // ownership was lost while CMD ran
	exitNoPerm       = 77  // EX_NOPERM: the server refused the credentials or a permission
	exitLimitDiffers = 78  // EX_CONFIG: run --limit: the semaphore's live permits use another limit
	exitCannotExec   = 126 // CMD exists but could not be started
	exitNotFound     = 127 // CMD not found
	exitSignalBase   = 128 // + N: CMD (or lockctl while waiting) ended by signal N
)

// exitStatus is the error a command returns to end lockctl with code; msg,
// when not empty, is printed on stderr as one line after "lockctl: ".
type exitStatus struct {
	code int
	msg  string
}

func (e *exitStatus) Error() string { return e.msg }

// failf returns an exitStatus with a formatted message.
func failf(code int, format string, args ...any) error {
	return &exitStatus{code: code, msg: fmt.Sprintf(format, args...)}
}

// usagef returns a usage error (exit 64).
func usagef(format string, args ...any) error { return failf(exitUsage, format, args...) }

// exitWith ends lockctl with code, printing nothing.
func exitWith(code int) error { return &exitStatus{code: code} }

// env is what a command sees of the process: its output streams and
// environment.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

func main() {
	if os.Getenv(guardEnv) == "1" {
		os.Exit(runGuard())
	}
	os.Exit(lockctl(os.Args[1:], &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}))
}

// lockctl runs the command line args and returns the exit status. Every
// failure is reported as one line on stderr; a panic becomes exit 70 with
// one line instead of a stack trace.
func lockctl(args []string, e *env) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(e.stderr, "lockctl: internal error: %s\n", oneLine(fmt.Sprint(r)))
			code = exitSoftware
		}
	}()
	err := dispatch(args, e)
	if err == nil {
		return exitOK
	}
	var st *exitStatus
	if !errors.As(err, &st) {
		st = &exitStatus{code: serverStatus(err), msg: err.Error()}
	}
	if st.msg != "" {
		fmt.Fprintf(e.stderr, "lockctl: %s\n", oneLine(st.msg))
	}
	return st.code
}

// commands maps each subcommand to its implementation.
var commands = map[string]func(args []string, g *connFlags, e *env) error{
	"run":     cmdRun,
	"status":  cmdStatus,
	"release": cmdRelease,
	"watch":   cmdWatch,
	"acl":     cmdACL,
	"guard":   cmdGuard,
	"ls":      cmdLs,
	"top":     cmdTop,
}

// dispatch parses the global options and runs the subcommand.
func dispatch(args []string, e *env) error {
	g := newConnFlags()
	fs := newFlagSet("lockctl")
	g.register(fs)
	rest, err := parseFlags(fs, args, false)
	if err != nil {
		return flagError("lockctl", mainUsage, err, e)
	}
	if len(rest) == 0 {
		return usagef("missing command (run, guard, status, release, watch, ls, top or acl); see 'lockctl --help'")
	}
	name := rest[0]
	if name == "help" {
		if len(rest) > 1 && usages[rest[1]] != "" {
			fmt.Fprint(e.stdout, usages[rest[1]])
		} else {
			fmt.Fprint(e.stdout, mainUsage)
		}
		return nil
	}
	cmd, ok := commands[name]
	if !ok {
		return usagef("unknown command %q; see 'lockctl --help'", name)
	}
	return cmd(rest[1:], g, e)
}

// oneLine folds s onto one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", " ")), " ")
}
