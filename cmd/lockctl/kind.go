package main

import (
	"context"
	"errors"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// One KEY is one thing. 'lockctl run --key KEY' holds the lock KEY (a
// plain or a fenced lock: the string KEY), 'run --limit N --key KEY' a
// permit of the semaphore KEY (the sorted set {KEY}:sem): two keys the
// server knows nothing in common of. So a run checks, once it holds what
// it asked for and before CMD starts, that KEY is not in use as the other
// kind, and if it is, gives back what it took and exits 65. Checking after
// taking, not before, closes the race: of a plain run and a permit run
// that start together, at least the later to check sees the other's hold
// (each holds before it looks), so they never both run CMD; at worst both
// refuse.

// otherKindError checks, for a run holding what req asked for, that KEY is
// not in use as the other kind: for a permit, that no plain lock holds KEY;
// for a plain or fenced lock, that KEY's semaphore has no live permit. It
// returns the exit status error to end the run with, or nil.
func otherKindError(ctx context.Context, client rueidis.Client, locks *lease.Locks, req acquireRequest) error {
	if req.limit > 0 {
		held, err := plainHeld(ctx, client, req.key)
		switch {
		case err != nil:
			return failf(serverStatus(err), "run: checking that %s is not held as a plain lock: %v", showKey(req.key), err)
		case held:
			return failf(exitOtherKind, "run: %s is held as a plain lock ('lockctl run' without --limit): "+
				"a KEY is one lock or one semaphore, never both; %s was not run", showKey(req.key), showKey(req.key))
		}
		return nil
	}
	n, err := livePermits(ctx, client, locks, req.key)
	switch {
	case err != nil && refusesPermission(err):
		return failf(exitNoPerm, "run: %s has a semaphore ('lockctl run --limit') whose permits this user may not count: %v "+
			"(grant the rule of 'lockctl acl --limit')", showKey(req.key), err)
	case err != nil:
		return failf(serverStatus(err), "run: checking that %s has no live semaphore permit: %v", showKey(req.key), err)
	case n > 0:
		return failf(exitOtherKind, "run: %s is a semaphore with %d live permit%s ('lockctl run --limit'): "+
			"a KEY is one lock or one semaphore, never both; nothing was run", showKey(req.key), n, plural(n))
	}
	return nil
}

// plainHeld reports whether key holds a lock's owner token (a string): GET,
// which needs no permission beyond a lock user's. A key of another type is
// no lock.
func plainHeld(ctx context.Context, client rueidis.Client, key string) (bool, error) {
	err := client.Do(ctx, client.B().Get().Key(key).Build()).Error()
	switch {
	case err == nil:
		return true, nil
	case rueidis.IsRedisNil(err) || isWrongType(err):
		return false, nil
	}
	return false, err
}

// livePermits counts the live permits of the semaphore name, by the
// server's clock. It first sends GET to its holders key, which a lock user
// may send: nil, or a string, means no semaphore (and no more is sent); a
// sorted set answers WRONGTYPE, and only then are its permits counted
// (lease.Semaphore.Holders, the holder count script). A name no semaphore
// can have (its hash tag would be empty) has none.
func livePermits(ctx context.Context, client rueidis.Client, locks *lease.Locks, name string) (int, error) {
	sem, err := conn.NewSemaphore("", name, 1)
	if err != nil {
		return 0, nil
	}
	err = client.Do(ctx, client.B().Get().Key(sem.HoldersKey).Build()).Error()
	switch {
	case err == nil || rueidis.IsRedisNil(err):
		return 0, nil
	case !isWrongType(err):
		return 0, err
	}
	return locks.Semaphore(name, 1).Holders(ctx)
}

// isWrongType reports whether err is the server's WRONGTYPE reply.
func isWrongType(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && serverCode(err) == "WRONGTYPE"
}

// checkOneKind runs otherKindError with a bounded context; on a conflict
// it releases lock (CMD never ran: nothing is lost) and returns the error.
func checkOneKind(client rueidis.Client, locks *lease.Locks, req acquireRequest, lock heldLock, e *env) error {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	err := otherKindError(ctx, client, locks, req)
	if err != nil {
		_ = release(lock, req.key, e)
	}
	return err
}
