package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/respire-go/respire/lease"
)

// guardTimeout bounds the guarded write (and its settling, when its reply
// is lost).
const guardTimeout = 10 * time.Second

// guardArgs is a parsed `lockctl guard`.
type guardArgs struct {
	req   acquireRequest
	write []string // the write command, name first
}

// parseGuard parses guard's command line.
func parseGuard(args []string, g *connFlags, e *env) (*guardArgs, error) {
	fs := newFlagSet("lockctl guard")
	g.register(fs)
	r := &guardArgs{}
	fs.StringVar(&r.req.key, "key", "", "")
	fs.StringVar(&r.req.counter, "fenced", "", "")
	fs.StringVar(&r.req.owner, "owner", "", "")
	ttl := newDuration(fs, "ttl", 30*time.Second, "")
	wait := newDuration(fs, "wait", 0, "")
	rest, err := parseFlags(fs, args, false)
	if err != nil {
		return nil, flagError("lockctl guard", guardUsage, err, e)
	}
	r.req.ttl, r.req.wait, r.req.once = *ttl, *wait, true
	switch {
	case r.req.key == "":
		return nil, usagef("guard: missing --key; see 'lockctl guard --help'")
	case len(rest) == 0:
		return nil, usagef("guard: missing the write (lockctl guard --key KEY -- COMMAND [ARGS...])")
	case r.req.ttl <= 0:
		return nil, usagef("guard: --ttl must be positive (got %v)", r.req.ttl)
	case r.req.counter == r.req.key:
		return nil, usagef("guard: --fenced must name a counter key other than --key")
	}
	r.write = rest
	if err := lease.CheckWrite(lease.Command(rest[0], rest[1:]...)); err != nil {
		return nil, guardError(r, err)
	}
	return r, nil
}

// cmdGuard is `lockctl guard`: acquire KEY, make one guarded write, release.
func cmdGuard(args []string, g *connFlags, e *env) error {
	r, err := parseGuard(args, g, e)
	if r == nil {
		return err
	}
	write := lease.Command(r.write[0], r.write[1:]...)
	b, err := g.open(e.getenv)
	if err != nil {
		return err
	}
	defer b.close()
	locks, err := lease.New(b.lockClient())
	if err != nil {
		return usagef("guard: %v", err)
	}
	defer locks.Close()
	ctx, cancel := context.WithTimeout(context.Background(), r.req.wait+guardTimeout)
	defer cancel()
	lock, err := acquire(ctx, locks, r.req)
	if err != nil {
		return acquireError(r.req, err)
	}
	gctx, gcancel := context.WithTimeout(context.Background(), guardTimeout)
	defer gcancel()
	err = lock.Guard(gctx, write)
	if rerr := release(lock, r.req.key, e); rerr != nil && err == nil {
		fmt.Fprintf(e.stderr, "lockctl: %s was no longer held after the write: %s\n", r.req.key, reason(rerr))
	}
	if err != nil {
		return guardError(r, err)
	}
	fmt.Fprintln(e.stdout, "written")
	return nil
}

// guardError is guard's error for a guarded write that did not (surely)
// run: a refused write command is a usage error (64), a lock lost before
// the write 76, a write that did not run or whose outcome is unknown 69.
func guardError(r *guardArgs, err error) error {
	var we *lease.WriteError
	switch {
	case errors.As(err, &we) && errors.Is(err, lease.ErrWriteNotAllowed):
		return usagef("guard: %s is not a guarded write command (allowed: %s)", r.write[0],
			strings.Join(lease.AllowedWriteCommands(), ", "))
	case errors.As(err, &we):
		return usagef("guard: %v", we)
	case errors.Is(err, lease.ErrCrossSlot):
		return usagef("guard: the write's keys and --key hash to different cluster slots; give them one hash tag ({job}:lock, {job}:state)")
	case errors.Is(err, lease.ErrOwnershipLost):
		return failf(exitLost, "lost %s before the write ran: nothing written (%s)", r.req.key, reason(err))
	case errors.Is(err, lease.ErrNotWritten):
		return failf(exitUnavailable, "the write did not run (its reply was lost; settled): %s", reason(err))
	case errors.Is(err, lease.ErrOutcomeUnknown):
		return failf(exitUnavailable, "the write's outcome is unknown (it may have run): %s", reason(err))
	}
	return failf(serverStatus(err), "guarded write on %s: %v", r.req.key, err)
}
