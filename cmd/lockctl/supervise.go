package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/respire-go/respire/lease"
)

// supervisor watches CMD and the lease from CMD's start to its end.
//
// Its order of work on a loss is the safety rule of `lockctl run`: CMD's
// group is signalled first, and only then is anything written; no write can
// end or stop lockctl (SIGPIPE is caught by cmdRun, SIGTTOU ignored by
// startChild), and write errors are ignored.
type supervisor struct {
	c    *child
	g    *guard // dismissed once CMD has exited
	lock heldLock
	r    *runArgs
	e    *env
	sigs <-chan os.Signal // the forwarded signals
	job  <-chan os.Signal // SIGTSTP and SIGCONT sent to lockctl

	cause    error // why the lease ended, once it has
	kill     *time.Timer
	killC    <-chan time.Time
	deadline time.Time // the end of the grace period after a loss
}

// run forwards signals to CMD's group until CMD exits. When the lease ends
// first, CMD's group gets SIGTERM, then SIGKILL after the grace period, and
// the cause is returned.
func (s *supervisor) run() error {
	ended := s.lock.Context().Done()
	defer func() {
		if s.kill != nil {
			s.kill.Stop()
		}
	}()
	for {
		select {
		case sig := <-s.sigs:
			s.c.terminate(sig.(syscall.Signal))
		case sig := <-s.job:
			// SIGTSTP: CMD's group stops first, lockctl follows (stopped);
			// SIGCONT: CMD's group resumes.
			s.c.signal(sig.(syscall.Signal))
		case <-s.c.stops:
			s.stopped()
		case <-ended:
			ended = nil
			s.lose(context.Cause(s.lock.Context()))
		case <-s.killC:
			s.killC = nil
			s.c.signal(syscall.SIGKILL)
		case <-s.c.done:
			return s.exited()
		}
	}
}

// lose handles the end of the lease while CMD runs: SIGTERM (and SIGCONT)
// to CMD's group, SIGKILL after the grace period, and only then one line
// on stderr. A second call does nothing.
func (s *supervisor) lose(cause error) {
	if s.cause != nil {
		return
	}
	if cause == nil {
		cause = errors.New("the lease ran out")
	}
	s.cause = cause
	s.c.terminate(syscall.SIGTERM)
	s.deadline = time.Now().Add(s.r.grace)
	s.kill = time.NewTimer(s.r.grace)
	s.killC = s.kill.C
	fmt.Fprintf(s.e.stderr, "lockctl: lost %s: %s; terminating %s\n", s.r.req.key, reason(cause), s.r.name)
}

// exited handles CMD's end: the guard is dismissed (what CMD left running
// is no longer lockctl's to end, see run --help); after a loss, the rest
// of CMD's group gets until the end of the grace period, then SIGKILL.
func (s *supervisor) exited() error {
	s.g.dismiss()
	s.c.reclaimTerminal()
	if s.cause != nil {
		s.c.reapGroup(s.deadline)
		return s.cause
	}
	if ctx := s.lock.Context(); ctx.Err() != nil { // ended as CMD exited
		cause := context.Cause(ctx)
		fmt.Fprintf(s.e.stderr, "lockctl: lost %s as %s exited: %s\n", s.r.req.key, s.r.name, reason(cause))
		return cause
	}
	return nil
}

// stillHeld reports whether lock's lease is still ours by its local
// estimate, read now (State compares the monotonic clock with the lease's
// end synchronously, so it is right right after a stop).
func stillHeld(lock heldLock) bool {
	st := lock.State()
	return (st == lease.StateHeld || st == lease.StateRecovering) && lock.Context().Err() == nil
}
