package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/respire-go/respire/lease"
)

// newRespire is lease.New(client), TryAcquire + Lock.Release; its
// keep-alive is Acquire(..., lease.WithKeepAlive()), Lock.Context (which ends
// when the lock is lost) and Lock.Close.
func newRespire(srv *server, c calls, ttl time.Duration) (*impl, error) {
	client, err := rueidis.NewClient(rueidisOption(srv))
	if err != nil {
		return nil, err
	}
	locks, err := lease.New(client)
	if err != nil {
		client.Close()
		return nil, err
	}
	try := func(key string) (func() error, error) {
		ctx, cancel := c.call()
		attempt, err := locks.TryAcquire(ctx, key, ttl)
		cancel()
		if err != nil || !attempt.Acquired() {
			return nil, err
		}
		return func() error {
			ctx, cancel := c.call()
			defer cancel()
			out, err := attempt.Lock().Release(ctx)
			if err == nil && out != lease.Released {
				err = fmt.Errorf("%w: %v", errNotOwned, out)
			}
			return err
		}, nil
	}
	hold := func(key string) (heldLock, error) {
		ctx, cancel := c.call()
		defer cancel()
		lock, err := locks.Acquire(ctx, key, ttl, lease.WithKeepAlive())
		if errors.Is(err, lease.ErrNotAcquired) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		lock.Context() // created lazily: a user runs the protected work under it, so it is part of a held lock's cost
		return respireHeld{lock}, nil
	}
	return &impl{name: "respire-go", wire: "SET NX PX, EVALSHA (on Redis 7.0)", try: try, hold: hold,
		close: func() { locks.Close(); client.Close() }}, nil
}

// respireHeld is a respire-go lock with its keep-alive.
type respireHeld struct{ lock *lease.Lock }

func (h respireHeld) lost() error    { return lostCause(h.lock.Context()) }
func (h respireHeld) release() error { return h.lock.Close() }

// newRedsync is redsync v4 on its goredis/v9 pool with one node:
// NewMutex(key, WithExpiry(ttl)), TryLockContext (one try; LockContext would
// retry 32 times, 50–250 ms apart) and UnlockContext. redsync has Extend but
// no keep-alive.
func newRedsync(srv *server, c calls, ttl time.Duration) (*impl, error) {
	client := goredisClient(srv)
	rs := redsync.New(goredis.NewPool(client))
	try := func(key string) (func() error, error) {
		mutex := rs.NewMutex(key, redsync.WithExpiry(ttl))
		ctx, cancel := c.call()
		err := mutex.TryLockContext(ctx)
		cancel()
		var taken *redsync.ErrTaken
		if errors.As(err, &taken) || errors.Is(err, redsync.ErrFailed) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return func() error {
			ctx, cancel := c.call()
			defer cancel()
			ok, err := mutex.UnlockContext(ctx)
			if err == nil && !ok {
				err = errNotOwned
			}
			return err
		}, nil
	}
	return &impl{name: "redsync", peer: true, wire: "SET NX EX, EVALSHA (a failed try also sends the EVALSHA)", try: try,
		close: func() { client.Close() }}, nil
}

// newRedislock is bsm/redislock: Obtain(ctx, key, ttl, nil) (nil options:
// no retry) and Lock.Release. It has Refresh but no keep-alive.
func newRedislock(srv *server, c calls, ttl time.Duration) (*impl, error) {
	client := goredisClient(srv)
	locker := redislock.New(client)
	try := func(key string) (func() error, error) {
		ctx, cancel := c.call()
		lock, err := locker.Obtain(ctx, key, ttl, nil)
		cancel()
		if errors.Is(err, redislock.ErrNotObtained) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return func() error {
			ctx, cancel := c.call()
			defer cancel()
			return lock.Release(ctx)
		}, nil
	}
	return &impl{name: "redislock", peer: true, wire: "EVALSHA (SET NX PX in Lua), EVALSHA", try: try,
		close: func() { client.Close() }}, nil
}

// newRueidislock is rueidislock.NewLocker with KeyValidity = ttl and every
// other option at its default: KeyMajority 2, so a lock is 2 of 3 keys on
// the one server, each taken by a Lua script and extended by its own
// goroutine; TryWithContext and the returned cancel to release. The lock
// lives in the context it was taken under, so with -ctx request that one
// context spans acquire, hold and release.
func newRueidislock(srv *server, c calls, ttl time.Duration) (*impl, error) {
	locker, err := rueidislock.NewLocker(rueidislock.LockerOption{ClientOption: rueidisOption(srv), KeyValidity: ttl})
	if err != nil {
		return nil, err
	}
	take := func(ctx context.Context, cancelReq context.CancelFunc, key string) (*rueidisHeld, error) {
		lctx, unlock, err := locker.TryWithContext(ctx, key)
		// Not locked; or, while the caller's own ctx is fine, a context error
		// of rueidislock's own (a key's script outlived TryNextAfter, 20 ms,
		// or was cut off by the attempt's internal cancel once a majority
		// failed): TryWithContext returns only after deleting what it took,
		// so the caller is told "not acquired" in all but name.
		if errors.Is(err, rueidislock.ErrNotLocked) || (isContextErr(err) && ctx.Err() == nil) {
			cancelReq()
			return nil, nil
		}
		if err != nil {
			cancelReq()
			return nil, err
		}
		return &rueidisHeld{ctx: lctx, unlock: unlock, cancelReq: cancelReq}, nil
	}
	try := func(key string) (func() error, error) {
		ctx, cancel := c.call()
		h, err := take(ctx, cancel, key)
		if h == nil || err != nil {
			return nil, err
		}
		return h.release, nil
	}
	hold := func(key string) (heldLock, error) {
		// The hold outlives any per-call timeout: a request context for it
		// must span the whole scenario.
		ctx, cancel := context.Background(), context.CancelFunc(noCancel)
		if c.request {
			ctx, cancel = context.WithTimeout(context.Background(), time.Hour)
		}
		h, err := take(ctx, cancel, key)
		if h == nil || err != nil {
			return nil, err
		}
		return h, nil
	}
	return &impl{name: "rueidislock", peer: true, wire: "3 × EVALSHA (SET NX PXAT + GET), 3 × EVALSHA (compare-and-delete)",
		try: try, hold: hold, close: locker.Close}, nil
}

func isContextErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// rueidisHeld is a rueidislock lock: its context ends when it is lost.
type rueidisHeld struct {
	ctx       context.Context
	unlock    context.CancelFunc
	cancelReq context.CancelFunc
}

func (h *rueidisHeld) lost() error { return lostCause(h.ctx) }

// lostCause is ctx's cause once it has ended, nil before.
func lostCause(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return context.Cause(ctx)
}

// release cancels the lock (rueidislock deletes its keys before the cancel
// returns) and then the request context.
func (h *rueidisHeld) release() error {
	h.unlock()
	h.cancelReq()
	return nil
}
