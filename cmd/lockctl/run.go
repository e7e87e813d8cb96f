package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/respire-go/respire/lease"
)

// releaseTimeout bounds the release after CMD exits; the lease ends by
// itself within its TTL if the release cannot be confirmed.
const releaseTimeout = 10 * time.Second

// maxLimit is the largest --limit: a semaphore's limit is stored on the
// server as a decimal, and no deployment runs more children than this.
const maxLimit = 1_000_000

// runArgs is a parsed `lockctl run`.
type runArgs struct {
	req   acquireRequest
	grace time.Duration
	name  string   // CMD as given
	path  string   // CMD resolved
	args  []string // CMD's arguments
}

// parseRun parses run's command line.
func parseRun(args []string, g *connFlags, e *env) (*runArgs, error) {
	fs := newFlagSet("lockctl run")
	g.register(fs)
	r := &runArgs{}
	fs.StringVar(&r.req.key, "key", "", "")
	fs.StringVar(&r.req.counter, "fenced", "", "")
	fs.BoolVar(&r.req.unfenced, "unfenced-renewal", false, "")
	fs.IntVar(&r.req.limit, "limit", 0, "")
	limitGiven := false
	fs.StringVar(&r.req.owner, "owner", "", "")
	ttl := newDuration(fs, "ttl", 30*time.Second, "")
	wait := newDuration(fs, "wait", 0, "")
	grace := newDuration(fs, "grace", 10*time.Second, "")
	rest, err := parseFlags(fs, args, false)
	if err != nil {
		return nil, flagError("lockctl run", runUsage, err, e)
	}
	r.req.ttl, r.req.wait, r.grace = *ttl, *wait, *grace
	fs.Visit(func(f *flag.Flag) { limitGiven = limitGiven || f.Name == "limit" })
	switch {
	case r.req.key == "":
		return nil, usagef("run: missing --key; see 'lockctl run --help'")
	case len(rest) == 0:
		return nil, usagef("run: missing the command to run (lockctl run --key KEY -- CMD [ARGS...])")
	case r.req.ttl <= 0:
		return nil, usagef("run: --ttl must be positive (got %v)", r.req.ttl)
	case r.req.counter == r.req.key:
		return nil, usagef("run: --fenced must name a counter key other than --key")
	case limitGiven && (r.req.limit < 1 || r.req.limit > maxLimit):
		return nil, usagef("run: --limit must be between 1 and %d (got %d)", maxLimit, r.req.limit)
	case r.req.limit > 0 && r.req.counter != "":
		return nil, usagef("run: --limit and --fenced do not go together (a semaphore's permits have no fencing token)")
	}
	r.name, r.args = rest[0], rest[1:]
	if r.path, err = commandPath(r.name); err != nil {
		return nil, err
	}
	return r, nil
}

// cmdRun is `lockctl run`.
func cmdRun(args []string, g *connFlags, e *env) error {
	r, err := parseRun(args, g, e)
	if r == nil {
		return err
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	// A write to a broken stdout or stderr pipe must not kill the
	// supervisor (Go dies of SIGPIPE on fds 1 and 2 unless it is notified):
	// with the signal caught, the write fails with EPIPE, and lockctl
	// ignores its write errors. Caught, not ignored: an ignored signal
	// would be inherited by CMD.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)

	b, err := g.open(e.getenv)
	if err != nil {
		return err
	}
	defer b.close()
	var opts []lease.Option
	if r.req.unfenced {
		opts = append(opts, lease.WithUnfencedRenewal())
	}
	locks, err := lease.New(b.lockClient(), opts...)
	if err != nil {
		return usagef("run: %v", err)
	}
	defer locks.Close()

	lock, sig, err := acquireInterruptibly(locks, r.req, sigs)
	switch {
	case sig != nil:
		if lock != nil {
			_ = release(lock, r.req.key, e) // CMD never ran: a loss changes nothing
		}
		return exitWith(signalStatus(sig))
	case err != nil:
		return acquireError(r.req, err)
	}
	if err := checkOneKind(b.client, locks, r.req, lock, e); err != nil {
		return err
	}
	return hold(lock, r, sigs, e)
}

// acquireInterruptibly acquires, giving up when one of the forwarded
// signals arrives first (then sig is that signal, and lock, if the
// acquisition still succeeded, must be released).
func acquireInterruptibly(locks *lease.Locks, req acquireRequest, sigs <-chan os.Signal) (heldLock, os.Signal, error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var sig os.Signal
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case sig = <-sigs:
			cancel(errors.New("interrupted by " + sig.String()))
		case <-stop:
		}
	}()
	lock, err := acquire(ctx, locks, req)
	close(stop)
	<-stopped
	return lock, sig, err
}

// acquireError is run's error for a failed acquisition.
func acquireError(req acquireRequest, err error) error {
	switch {
	case errors.Is(err, lease.ErrLimitMismatch):
		return failf(exitLimitDiffers, "run: %v (every 'lockctl run --limit' on %s must give the same limit)", err, showKey(req.key))
	case errors.Is(err, lease.ErrInvalidName):
		return usagef("run: %v", err)
	case errors.Is(err, lease.ErrNotAcquired) && req.limit > 0:
		if req.wait > 0 {
			return failf(exitNotAcquired, "%s has all its %d permits held by other owners (waited %v)", req.key, req.limit, req.wait)
		}
		return failf(exitNotAcquired, "%s has all its %d permits held by other owners", req.key, req.limit)
	case errors.Is(err, lease.ErrNotAcquired):
		if req.wait > 0 {
			return failf(exitNotAcquired, "%s is held by another owner (waited %v)", req.key, req.wait)
		}
		return failf(exitNotAcquired, "%s is held by another owner", req.key)
	case errors.Is(err, lease.ErrInvalidTTL), errors.Is(err, lease.ErrEmptyKey), errors.Is(err, lease.ErrInvalidOption):
		return usagef("run: %v", err)
	case errors.Is(err, lease.ErrCrossSlot):
		return usagef("run: --key and --fenced hash to different cluster slots; give them one hash tag ({job}:lock, {job}:fence)")
	case errors.Is(err, lease.ErrFencingNotPermitted):
		return failf(exitNoPerm, "%v (grant the rule of 'lockctl acl --managed', or use --unfenced-renewal)", err)
	}
	return failf(serverStatus(err), "acquiring %s: %v", req.key, err)
}

// hold runs CMD while lock is held and returns how lockctl ends.
func hold(lock heldLock, r *runArgs, sigs <-chan os.Signal, e *env) error {
	if !stillHeld(lock) { // lockctl was stopped or slow between the acquisition and now
		_ = release(lock, r.req.key, e)
		return failf(exitLost, "lost %s before %s could start", r.req.key, r.name)
	}
	extra := []string{"RESPIRE_LOCK_KEY=" + r.req.key}
	if r.req.limit > 0 {
		extra = append(extra, "RESPIRE_LOCK_LIMIT="+strconv.Itoa(r.req.limit))
	}
	if r.req.counter != "" {
		extra = append(extra, "RESPIRE_FENCING_TOKEN="+strconv.FormatInt(lock.FencingToken(), 10))
	}
	job := make(chan os.Signal, 4)
	signal.Notify(job, syscall.SIGTSTP, syscall.SIGCONT)
	defer signal.Stop(job)
	c, g, err := startGuarded(r, extra, e)
	defer g.dismiss()
	if err != nil {
		_ = release(lock, r.req.key, e) // CMD never ran: a loss changes nothing
		return err
	}
	s := &supervisor{c: c, g: g, lock: lock, r: r, e: e, sigs: sigs, job: job}
	lost := s.run()
	if lost == nil {
		if lost = release(lock, r.req.key, e); lost != nil {
			fmt.Fprintf(e.stderr, "lockctl: %s was no longer held when %s exited: %s\n", r.req.key, r.name, reason(lost))
		}
	}
	if lost != nil {
		return exitWith(exitLost)
	}
	return exitWith(c.status())
}

// startGuarded starts the guard, then CMD in the guard's process group. If
// either cannot be done, CMD starts in a group of its own, unguarded, and
// lockctl says so (the parent-death signal still ends CMD itself); g is
// then nil.
func startGuarded(r *runArgs, extra []string, e *env) (c *child, g *guard, err error) {
	g, gerr := startGuard()
	if gerr == nil {
		if c, err = startChild(r.name, r.path, r.args, extra, g.group()); err == nil {
			return c, g, nil
		}
		g.dismiss()
		g, gerr = nil, fmt.Errorf("cannot join the guard's process group: %w", err)
	}
	if c, err = startChild(r.name, r.path, r.args, extra, 0); err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(e.stderr, "lockctl: %v: if lockctl dies, only %s itself is killed, not what it started\n", gerr, r.name)
	return c, nil, nil
}

// release releases lock once CMD has exited. It returns an error when the
// lock turns out to have been lost; a release that fails otherwise is
// reported and left to the lease's expiry.
func release(lock heldLock, key string, e *env) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	outcome, err := lock.Release(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(e.stderr, "lockctl: releasing %s: %s (it expires by itself within its TTL)\n", key, reason(err))
		return nil
	case outcome == lease.NotOwned:
		return errors.New("the release found another owner or no key")
	}
	return nil
}

// reason is err's text on one line, without the library's package prefix.
func reason(err error) string {
	return oneLine(strings.TrimPrefix(err.Error(), "lease: "))
}
