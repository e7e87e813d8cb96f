package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/election"
	"github.com/respire-go/respire/lease"
)

// The loss scene's lock: a long lease with a keep-alive, renewed every
// half lease, so that only a push can tell the holder of a loss quickly.
const (
	lossKey   = "locks:report"
	lossLease = 30 * time.Second
)

// lossRun is what the loss scene found: how long after another client
// overwrote the key the holder's lock.Context() ended, and with what.
type lossRun struct {
	seenAfter time.Duration
	cause     error
}

// lossSeen: A holds a lock with a keep-alive; another client overwrites the
// key (as after a lost race or an operator's SET); A's lock.Context() ends
// at once, told by the key's invalidation push, not at its next renewal.
func (s *storyStage) lossSeen(ctx context.Context) (lossRun, error) {
	locks, err := s.newLocks()
	if err != nil {
		return lossRun{}, err
	}
	lock, err := locks.Acquire(ctx, lossKey, lossLease, lease.WithKeepAlive())
	if err != nil {
		return lossRun{}, err
	}
	defer lock.Close()
	work := lock.Context()
	if reply := s.srv.Exec("SET", lossKey, "another-owner", "XX", "KEEPTTL"); reply != "+OK\r\n" {
		return lossRun{}, fmt.Errorf("overwriting the key: %q", reply)
	}
	overwritten := time.Now()
	if err := waitDone(ctx, work, lossLease/2, "the holder noticing the loss"); err != nil {
		return lossRun{}, err
	}
	return lossRun{seenAfter: time.Since(overwritten), cause: context.Cause(work)}, nil
}

// printLoss prints the loss scene.
func printLoss(p *printer, run lossRun) {
	p.line("")
	p.line("2. Loss seen at once: another client overwrites A's key while A works (lease %s, keep-alive)", dur(lossLease))
	sideBySide(p, 40, [][2]string{
		{"naive: A works on, unaware", fmt.Sprintf("A's lock.Context() ended %s later, cause:", ms(run.seenAfter))},
		{"", trimLease(run.cause)},
	})
}

// The semaphore scene: jobs that each hold a permit for jobTime, more
// jobs than permits.
const (
	semaphoreName  = "workers"
	semaphoreLimit = 3
	semaphoreJobs  = 10
	jobTime        = 50 * time.Millisecond
)

// semaphoreRun is what the semaphore scene found: the most jobs that ran
// at once, counted as they ran, how many ran, and how long all took.
type semaphoreRun struct {
	most, done int
	took       time.Duration
}

// semaphoreCaps: ten jobs, each in its own goroutine with a Locks of its
// own (a process), wait for a permit of a semaphore of 3, run jobTime and
// release it; a counter of the jobs running at once keeps its maximum.
func (s *storyStage) semaphoreCaps(ctx context.Context) (semaphoreRun, error) {
	workers := make([]*lease.Locks, semaphoreJobs)
	for i := range workers {
		var err error
		if workers[i], err = s.newLocks(); err != nil {
			return semaphoreRun{}, err
		}
	}
	var running, most, done atomic.Int64
	errs := make([]error, semaphoreJobs)
	start := time.Now()
	var wg sync.WaitGroup
	for i, locks := range workers {
		wg.Go(func() {
			permit, err := locks.Semaphore(semaphoreName, semaphoreLimit).Acquire(ctx, 10*time.Second, lease.WithWait(20*time.Second))
			if err != nil {
				errs[i] = err
				return
			}
			now := running.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			errs[i] = sleepCtx(ctx, jobTime)
			running.Add(-1)
			done.Add(1)
			_, err = permit.Release(ctx)
			errs[i] = errors.Join(errs[i], err)
		})
	}
	wg.Wait()
	return semaphoreRun{most: int(most.Load()), done: int(done.Load()), took: time.Since(start)}, errors.Join(errs...)
}

// printSemaphore prints the semaphore scene.
func printSemaphore(p *printer, run semaphoreRun) {
	p.line("")
	p.line("3. A semaphore caps workers: %d jobs of %s wait for Semaphore(%q, %d)", semaphoreJobs, dur(jobTime), semaphoreName, semaphoreLimit)
	p.line("   at most %d ran at once (counted as they ran); all %d done in %s", run.most, run.done, ms(run.took))
}

// The election scene's lease: a dead leader keeps the election waiting
// for up to this long; a leader that resigns, for a round trip.
const (
	electionKey   = "elections:scheduler"
	electionLease = 4 * time.Second
)

// electionRun is what the election scene found: the leader's work ended
// with workCause on SIGTERM, and the follower led ledAfter the signal.
type electionRun struct {
	workCause error
	ledAfter  time.Duration
}

// electionTakeover: "a" leads and runs its work under ContextFrom of its
// process's context; "b" waits in Campaign; "a" gets SIGTERM (its process
// context is cancelled): its work ends, it resigns, and "b" leads.
func (s *storyStage) electionTakeover(ctx context.Context) (electionRun, error) {
	locksA, errA := s.newLocks()
	locksB, errB := s.newLocks()
	if err := errors.Join(errA, errB); err != nil {
		return electionRun{}, err
	}
	a, errA := election.New(locksA, electionKey, electionLease)
	b, errB := election.New(locksB, electionKey, electionLease)
	if err := errors.Join(errA, errB); err != nil {
		return electionRun{}, err
	}
	if err := a.Campaign(ctx, "a"); err != nil {
		return electionRun{}, err
	}
	won := make(chan error, 1)
	go func() { won <- b.Campaign(ctx, "b") }()
	process, sigterm := context.WithCancel(ctx) // signal.NotifyContext in a service
	work, stop := a.ContextFrom(process)
	defer stop()
	signalled := time.Now()
	sigterm()
	<-work.Done() // the leader's work returns
	run := electionRun{workCause: context.Cause(work)}
	err := errors.Join(a.Resign(context.WithoutCancel(ctx)), <-won)
	run.ledAfter = time.Since(signalled)
	return run, errors.Join(err, b.Resign(ctx))
}

// printElection prints the election scene.
func printElection(p *printer, run electionRun) {
	p.line("")
	p.line("4. An election hands over on SIGTERM: \"a\" leads, \"b\" waits in Campaign (lease %s)", dur(electionLease))
	p.line("   a's work ends (%v), a resigns: b leads %s after the signal", run.workCause, ms(run.ledAfter))
	p.line("   (had a died instead, b would lead once a's lease expired: within %s)", dur(electionLease))
}
