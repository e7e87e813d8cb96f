package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	respiregoredis "github.com/respire-go/respire/goredis"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/rueidislease"
)

// newRespire is rueidislease.New(client), TryAcquire + Lock.Release; its
// keep-alive is Acquire(..., lease.WithKeepAlive()), Lock.Context (which ends
// when the lock is lost) and Lock.Close; it waits with
// Acquire(..., lease.WithWaitUntilDone()), woken by invalidation pushes.
func newRespire(srv *server, c calls, ttl time.Duration) (*impl, error) {
	im, err := respireImpl(srv, c, ttl)
	if err != nil {
		return nil, err
	}
	im.name, im.waits = "respire-go", "CLIENT TRACKING invalidation push (per-node watcher), retry interval as safety net"
	return im, nil
}

// newRespirePoll is respire-go with lease.WithoutPush(): waiting polls
// every 50 ms (the retry interval), a keep-alive learns of loss at its next
// renewal. Only in the waiting scenarios.
func newRespirePoll(srv *server, c calls, ttl time.Duration) (*impl, error) {
	im, err := respireImpl(srv, c, ttl, lease.WithoutPush())
	if err != nil {
		return nil, err
	}
	im.name, im.variant, im.waits = "respire-go-poll", true, "polls SET NX every 50 ms (lease.WithoutPush)"
	return im, nil
}

// newRespireFair is respire-go whose waiting acquisitions wait fairly
// (lease.WithFairWait: a ticket in the key's queue on the server, granted
// in ticket order). Only in the waiting scenarios.
func newRespireFair(srv *server, c calls, ttl time.Duration) (*impl, error) {
	client, err := rueidis.NewClient(rueidisOption(srv))
	if err != nil {
		return nil, err
	}
	locks, err := rueidislease.New(client)
	if err != nil {
		client.Close()
		return nil, err
	}
	im := respireOn(locks, client.Close, c, ttl)
	im.wait = func(ctx context.Context, key string) (func() error, error) {
		lock, err := locks.Acquire(ctx, key, ttl, lease.WithWaitUntilDone(), lease.WithFairWait())
		if err != nil {
			return nil, err
		}
		return func() error {
			rctx, cancel := c.call()
			defer cancel()
			out, err := lock.Release(rctx)
			if err == nil && out != lease.Released {
				err = fmt.Errorf("%w: %v", errNotOwned, out)
			}
			return err
		}, nil
	}
	im.semWait = respireSemWait(locks, c, ttl, lease.WithFairWait())
	im.name, im.variant, im.waits = "respire-go-fair", true,
		"lease.WithFairWait: a ticket in the key's queue; a release hands the key to the head, push wakes only it"
	return im, nil
}

// newRespireGoredis is respire-go over go-redis: goredis.New on a go-redis
// client at its defaults (the client raw-go-redis, redsync and redislock
// use), the same calls as respire-go.
func newRespireGoredis(srv *server, c calls, ttl time.Duration) (*impl, error) {
	client := goredisClient(srv)
	locks, err := respiregoredis.New(client)
	if err != nil {
		client.Close()
		return nil, err
	}
	im := respireOn(locks, func() { client.Close() }, c, ttl)
	im.name, im.waits = "respire-go-goredis", "CLIENT TRACKING invalidation push (per-node watcher), retry interval as safety net"
	return im, nil
}

// respireImpl is respire-go on a client of its own, with opts.
func respireImpl(srv *server, c calls, ttl time.Duration, opts ...lease.Option) (*impl, error) {
	client, err := rueidis.NewClient(rueidisOption(srv))
	if err != nil {
		return nil, err
	}
	locks, err := rueidislease.New(client, opts...)
	if err != nil {
		client.Close()
		return nil, err
	}
	return respireOn(locks, client.Close, c, ttl), nil
}

// respireOn is respire-go's calls on locks; closeClient closes its client
// after locks.
func respireOn(locks *lease.Locks, closeClient func(), c calls, ttl time.Duration) *impl {
	release := func(lock *lease.Lock) error {
		ctx, cancel := c.call()
		defer cancel()
		out, err := lock.Release(ctx)
		if err == nil && out != lease.Released {
			err = fmt.Errorf("%w: %v", errNotOwned, out)
		}
		return err
	}
	try := func(key string) (func() error, error) {
		ctx, cancel := c.call()
		attempt, err := locks.TryAcquire(ctx, key, ttl)
		cancel()
		if err != nil || !attempt.Acquired() {
			return nil, err
		}
		return func() error { return release(attempt.Lock()) }, nil
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
	wait := func(ctx context.Context, key string) (func() error, error) {
		lock, err := locks.Acquire(ctx, key, ttl, lease.WithWaitUntilDone())
		if err != nil {
			return nil, err
		}
		return func() error { return release(lock) }, nil
	}
	watch := func(key string, ttl time.Duration) (watchedLock, error) {
		lock, err := locks.Acquire(context.Background(), key, ttl, lease.WithKeepAlive())
		if err != nil {
			return nil, err
		}
		return respireHeld{lock}, nil
	}
	return &impl{wire: "SET NX PX, EVALSHA (on Redis 7.0)", try: try, hold: hold, wait: wait, watch: watch,
		serverKeys: func(key string) []string { return []string{key} }, sem: respireSem(locks, c, ttl),
		semWait: respireSemWait(locks, c, ttl), semHold: respireSemHold(locks, c, ttl),
		guarded: respireGuarded(locks, c, ttl), close: func() { locks.Close(); closeClient() }}
}

// respireHeld is a respire-go lock with its keep-alive.
type respireHeld struct{ lock *lease.Lock }

func (h respireHeld) lost() error           { return lostCause(h.lock.Context()) }
func (h respireHeld) release() error        { return h.lock.Close() }
func (h respireHeld) done() <-chan struct{} { return h.lock.Context().Done() }

// redsyncUnlock is the release of a redsync lock: UnlockContext under one
// call's ctx; a key no longer ours is errNotOwned.
func redsyncUnlock(c calls, mutex *redsync.Mutex) func() error {
	return func() error {
		ctx, cancel := c.call()
		defer cancel()
		ok, err := mutex.UnlockContext(ctx)
		if err == nil && !ok {
			err = errNotOwned
		}
		return err
	}
}

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
		return redsyncUnlock(c, mutex), nil
	}
	wait := func(ctx context.Context, key string) (func() error, error) {
		mutex := rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(math.MaxInt32))
		if err := mutex.LockContext(ctx); err != nil {
			return nil, err
		}
		return redsyncUnlock(c, mutex), nil
	}
	return &impl{name: "redsync", peer: true, wire: "SET NX EX, EVALSHA (a failed try also sends the EVALSHA)", try: try,
		wait: wait, waits: "LockContext: retries 50–250 ms apart (tries unbounded here; 32 by default)",
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
	retry := &redislock.Options{RetryStrategy: redislock.LinearBackoff(50 * time.Millisecond)}
	wait := func(ctx context.Context, key string) (func() error, error) {
		lock, err := locker.Obtain(ctx, key, ttl, retry)
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
		wait: wait, waits: "Obtain with LinearBackoff(50 ms) (no retry by default)",
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
	wait := func(ctx context.Context, key string) (func() error, error) {
		_, unlock, err := locker.WithContext(ctx, key)
		if err != nil {
			return nil, err
		}
		return func() error { unlock(); return nil }, nil
	}
	watchers := &rueidisLockers{srv: srv, byLease: map[time.Duration]rueidislock.Locker{}}
	return &impl{name: "rueidislock", peer: true, wire: "3 × EVALSHA (SET NX PXAT + GET), 3 × EVALSHA (compare-and-delete)",
		waits: "WithContext: client-side-caching invalidation (OPTOUT tracking on its client)",
		try:   try, hold: hold, wait: wait, watch: watchers.watch,
		serverKeys: func(key string) []string {
			return []string{"rueidislock:0:" + key, "rueidislock:1:" + key, "rueidislock:2:" + key}
		},
		close: func() { watchers.close(); locker.Close() }}, nil
}

// rueidisLockers are rueidislock lockers made on demand for a lease other
// than -ttl (KeyValidity is per locker), at otherwise default options.
type rueidisLockers struct {
	srv     *server
	mu      sync.Mutex
	byLease map[time.Duration]rueidislock.Locker
}

// watch takes key with WithContext on the locker for lease: the lock's
// context ends when rueidislock finds the lock lost.
func (r *rueidisLockers) watch(key string, lease time.Duration) (watchedLock, error) {
	r.mu.Lock()
	locker, ok := r.byLease[lease]
	if !ok {
		var err error
		locker, err = rueidislock.NewLocker(rueidislock.LockerOption{ClientOption: rueidisOption(r.srv), KeyValidity: lease})
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		r.byLease[lease] = locker
	}
	r.mu.Unlock()
	ctx, unlock, err := locker.WithContext(context.Background(), key)
	if err != nil {
		return nil, err
	}
	return &rueidisHeld{ctx: ctx, unlock: unlock, cancelReq: noCancel}, nil
}

func (r *rueidisLockers) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.byLease {
		l.Close()
	}
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

func (h *rueidisHeld) lost() error           { return lostCause(h.ctx) }
func (h *rueidisHeld) done() <-chan struct{} { return h.ctx.Done() }

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
