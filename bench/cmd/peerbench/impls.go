package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// releaseScript is the compare-and-delete the raw implementations send by
// EVALSHA, the same script respire-go sends to a Redis 7.0 server.
const releaseScript = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

// errNotOwned is a release that found the key gone or owned by another
// token, which no scenario should ever see.
var errNotOwned = errors.New("release did not delete the lock it held")

// impl is one lock implementation under test. try takes key once (no
// waiting); release is nil when another owner holds it. hold takes key with
// the implementation's keep-alive; nil when it has none.
type impl struct {
	name    string
	peer    bool   // a lock library other than respire-go: a candidate for "best peer"
	variant bool   // respire-go with other options: runs only in the waiting scenarios (waiting.go)
	wire    string // what one acquire+release costs on the wire, for the report
	waits   string // how a waiting acquisition learns the key is free, for the report ("" when it cannot wait)
	try     func(key string) (release func() error, err error)
	hold    func(key string) (heldLock, error)
	// wait takes key, waiting while another owner holds it, until ctx is
	// done; nil when the implementation cannot wait.
	wait func(ctx context.Context, key string) (release func() error, err error)
	// watch takes key with the keep-alive and a lease of its own; nil when
	// the implementation has no keep-alive.
	watch func(key string, lease time.Duration) (watchedLock, error)
	// serverKeys are the server keys that make up the lock on key: what a
	// third party deletes to take it away, or sets to hold it.
	serverKeys func(key string) []string
	// sem takes a permit of the semaphore name (limit) once, without
	// waiting; release is nil when it is full. nil when the implementation
	// has no lease semaphore (semaphore.go).
	sem func(name string, limit int) (release func() error, err error)
	// semWait takes a permit, waiting while the semaphore is full, until
	// ctx is done; semHold takes one with the keep-alive (nil: none).
	semWait func(ctx context.Context, name string, limit int) (release func() error, err error)
	semHold func(name string, limit int) (heldLock, error)
	// guarded prepares writes under the hash tag tag: write(i) makes one
	// (guarded.go), done ends what guarded took; nil when the
	// implementation is not in the guarded-write table.
	guarded func(tag string) (write func(i int) error, done func() error, err error)
	// guardedScript is raw rueidis' second row of the guarded-write table:
	// the guard script by hand; nil for every other implementation.
	guardedScript func(tag string) (write func(i int) error, done func() error, err error)
	// guardedUnguarded is its third: the same writes in a script without
	// the guard (guarded.go).
	guardedUnguarded func(tag string) (write func(i int) error, done func() error, err error)
	close            func()
}

// watchedLock is a lock taken with a keep-alive whose loss is observable.
type watchedLock interface {
	done() <-chan struct{} // closed once the implementation says the lock is lost (or released)
	release() error
}

// heldLock is a lock taken with a keep-alive.
type heldLock interface {
	lost() error    // why the implementation says the lock is no longer held; nil while held
	release() error // stop the keep-alive and delete the lock
}

// calls makes the context of one call: context.Background(), or (-ctx
// request) a fresh context.WithTimeout, as a service passes from its request.
type calls struct {
	request bool
	timeout time.Duration
}

func noCancel() {}

// call returns the context for one library call and its cancel.
func (c calls) call() (context.Context, context.CancelFunc) {
	if !c.request {
		return context.Background(), noCancel
	}
	return context.WithTimeout(context.Background(), c.timeout)
}

// lease is the lease length the server can be trusted to keep: the TTL, or
// less when a request context's deadline bounds it (rueidislock caps its
// keys' validity at the ctx's deadline).
func (c calls) lease(ttl time.Duration) time.Duration {
	if c.request {
		return min(ttl, c.timeout)
	}
	return ttl
}

// newToken is 16 random bytes in hex, as respire-go's tokens.
func newToken() string {
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// rueidisOption is the client option every rueidis-based implementation
// starts from: the library's defaults (client-side caching on, OPTIN).
func rueidisOption(srv *server) rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{srv.addr}, Password: srv.password}
}

// goredisClient is a go-redis client at its defaults.
func goredisClient(srv *server) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: srv.addr, Password: srv.password})
}

// newRawRueidis is SET NX PX + EVALSHA compare-and-delete by hand on rueidis.
func newRawRueidis(srv *server, c calls, ttl time.Duration) (*impl, error) {
	client, err := rueidis.NewClient(rueidisOption(srv))
	if err != nil {
		return nil, err
	}
	sha, err := client.Do(context.Background(), client.B().ScriptLoad().Script(releaseScript).Build()).ToString()
	if err != nil {
		client.Close()
		return nil, err
	}
	ms := ttl.Milliseconds()
	release := func(key, token string) error {
		ctx, cancel := c.call()
		defer cancel()
		n, err := client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(1).Key(key).Arg(token).Build()).AsInt64()
		if err == nil && n != 1 {
			err = errNotOwned
		}
		return err
	}
	try := func(key string) (func() error, error) {
		token := newToken()
		ctx, cancel := c.call()
		err := client.Do(ctx, client.B().Set().Key(key).Value(token).Nx().PxMilliseconds(ms).Build()).Error()
		cancel()
		if rueidis.IsRedisNil(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("SET NX: %w", err)
		}
		return func() error { return release(key, token) }, nil
	}
	sem, err := rawSem(client, c, ttl)
	if err != nil {
		client.Close()
		return nil, err
	}
	return &impl{name: "raw-rueidis", wire: "SET NX PX, EVALSHA", try: try, wait: pollTry(try),
		waits: fmt.Sprintf("polls SET NX every %v (jittered ±50 %%), by hand", rawPollEvery), sem: sem, semWait: pollSem(sem),
		guarded: rawGuarded(client, c), guardedScript: rawGuardScript(client, c),
		guardedUnguarded: rawUnguardedScript(client, c), close: client.Close}, nil
}

// newRawGoredis is the same by hand on go-redis (SetNX sends EX for a TTL of
// whole seconds, PX otherwise: the same work for the server).
func newRawGoredis(srv *server, c calls, ttl time.Duration) (*impl, error) {
	client := goredisClient(srv)
	sha, err := client.ScriptLoad(context.Background(), releaseScript).Result()
	if err != nil {
		client.Close()
		return nil, err
	}
	keys := func(key string) []string { return []string{key} }
	try := func(key string) (func() error, error) {
		token := newToken()
		ctx, cancel := c.call()
		ok, err := client.SetNX(ctx, key, token, ttl).Result()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("SET NX: %w", err)
		}
		if !ok {
			return nil, nil
		}
		return func() error {
			ctx, cancel := c.call()
			defer cancel()
			n, err := client.EvalSha(ctx, sha, keys(key), token).Int64()
			if err == nil && n != 1 {
				err = errNotOwned
			}
			return err
		}, nil
	}
	return &impl{name: "raw-go-redis", wire: "SET NX EX, EVALSHA", try: try, close: func() { client.Close() }}, nil
}
