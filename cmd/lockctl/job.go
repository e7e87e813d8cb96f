package main

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// Job control. A shell user's Ctrl-Z stops the job, and fg or bg resumes
// it; for `lockctl run` the job is lockctl and CMD together, and a stopped
// CMD must not hold the lock for ever while lockctl renews it. So:
//
//   - When CMD stops by job control (SIGTSTP, SIGTTIN, SIGTTOU: Ctrl-Z in
//     the terminal, which CMD's group has, or SIGTSTP sent to lockctl,
//     which lockctl passes to CMD's group), lockctl takes the terminal
//     back and stops too: SIGSTOP to its process group, the job the shell
//     sees. While stopped it renews nothing, so a lease stopped longer
//     than its TTL ends.
//   - When lockctl is continued (fg, bg, kill -CONT), it first checks the
//     lease: still held, CMD's group gets the terminal again if lockctl's
//     group is the foreground group (fg) and is continued; lost, it is a
//     loss like any other (SIGTERM, SIGKILL after --grace, exit 76): CMD
//     never runs on after its lease ended.
//   - Without a job-control shell to continue it — lockctl's process group
//     is orphaned (POSIX: no member has its parent in another group of the
//     same session), as for a session leader under script(1), docker -t or
//     a service manager — the kernel discards job-control stops, and
//     lockctl does the same: it continues CMD's group at once and goes on.
//     It never stops where nobody could resume it.
//   - CMD stopped by SIGSTOP (a debugger, kill -STOP) is a pause, not a
//     job stop: lockctl keeps renewing.
//
// lockctl stops only after CMD has stopped, so it never stops while CMD
// runs. A CMD continued behind lockctl's back (kill -CONT to CMD itself)
// while lockctl is stopped runs without renewals: resume the job, not CMD.

// stopped handles CMD's stop.
func (s *supervisor) stopped() {
	sig := s.c.stopSignal()
	if s.cause != nil || !jobStop(sig) {
		return // a loss is being handled, or a pause (SIGSTOP)
	}
	if !stillHeld(s.lock) {
		s.lose(context.Cause(s.lock.Context()))
		return
	}
	if orphanedGroup() {
		s.c.signal(syscall.SIGCONT) // as the kernel would have discarded the stop
		return
	}
	s.c.reclaimTerminal()
	if s.c.stopSignal() == 0 {
		s.c.resume() // continued meanwhile: nothing to follow
		return
	}
	suspend(s.lock.Context(), s.job)
	if !stillHeld(s.lock) {
		cause := context.Cause(s.lock.Context())
		if cause == nil {
			cause = errors.New("the lease ran out while " + s.r.name + " was stopped")
		}
		s.lose(cause)
		return
	}
	s.c.resume()
}

// jobStop reports whether sig is a job-control stop.
func jobStop(sig syscall.Signal) bool {
	return sig == syscall.SIGTSTP || sig == syscall.SIGTTIN || sig == syscall.SIGTTOU
}

// suspend stops lockctl's process group with SIGSTOP and returns once
// lockctl has been continued (the SIGCONT that job, lockctl's SIGTSTP and
// SIGCONT notifications, receives) or leaseCtx has ended.
func suspend(leaseCtx context.Context, job <-chan os.Signal) {
	for len(job) > 0 { // a stale SIGCONT must not count as the resume
		<-job
	}
	if err := syscall.Kill(0, syscall.SIGSTOP); err != nil { // 0: every process of lockctl's group
		return
	}
	for {
		select {
		case sig := <-job:
			if sig == syscall.SIGCONT {
				return
			}
		case <-leaseCtx.Done():
			return
		}
	}
}
