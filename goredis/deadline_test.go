package goredis

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// ioOptions are client options whose I/O go-redis bounds differently: at
// its defaults (ReadTimeout 5 s, no ctx deadlines), with ctx deadlines and
// no timeout (the options of issue 27's 60 s Close), with a long
// ReadTimeout, and with both.
var ioOptions = map[string]func(*redis.Options){
	"defaults":                   func(*redis.Options) {},
	"ctx-deadlines-no-timeout":   func(o *redis.Options) { o.ContextTimeoutEnabled, o.ReadTimeout, o.WriteTimeout = true, -1, -1 },
	"read-timeout-30s":           func(o *redis.Options) { o.ReadTimeout = 30 * time.Second },
	"ctx-deadlines-read-30s":     func(o *redis.Options) { o.ContextTimeoutEnabled, o.ReadTimeout = true, 30*time.Second },
	"ctx-deadlines-read-timeout": func(o *redis.Options) { o.ContextTimeoutEnabled, o.ReadTimeout = true, 200*time.Millisecond },
}

// doneWithin is how much later than a bound a call may return on a loaded
// machine (race detector, two cores); every bound broken here was broken
// by seconds (go-redis' 5 s default timeout) or for ever.
const doneWithin = 2 * time.Second

// TestGoRedisReturnsByTheDeadline_FrozenServer: on a frozen server
// (SIGSTOP), with each of ioOptions, a round trip returns by its ctx's
// deadline (not at go-redis' ReadTimeout, nor never), with an error that
// is not ErrNotWritten (its SET ran once the server resumed); the
// connection is broken from then on — the next round trip fails at once
// with ErrNotWritten, never reading the late reply — and Close returns at
// once.
func TestGoRedisReturnsByTheDeadline_FrozenServer(t *testing.T) {
	for name, opts := range ioOptions {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, _, client := private(t, false, opts)
			cn := dial(t, newAdapter(t, client), srv.Addr)
			k := key(t, "k")
			if _, err := do(ctxFor(t, 5*time.Second), cn, "GET", k); err != nil {
				t.Fatal(err)
			}
			freeze(t, srv)
			start := time.Now()
			_, err := do(ctxFor(t, 300*time.Millisecond), cn, "SET", k, "v")
			if took := time.Since(start); err == nil || errors.Is(err, conn.ErrNotWritten) || took > 300*time.Millisecond+doneWithin {
				t.Fatalf("on a frozen server: %v after %v, want an error that is not ErrNotWritten at the deadline", err, took)
			}
			if cn.Err() == nil {
				t.Fatal("the connection is not broken after its round trip failed")
			}
			start = time.Now()
			if _, err := do(ctxFor(t, 5*time.Second), cn, "GET", k); !errors.Is(err, conn.ErrNotWritten) || time.Since(start) > doneWithin {
				t.Fatalf("the next round trip: %v after %v, want ErrNotWritten at once", err, time.Since(start))
			}
			start = time.Now()
			cn.Close()
			if took := time.Since(start); took > doneWithin {
				t.Fatalf("Close took %v", took)
			}
			thaw(t, srv)
			eventuallyGet(t, client, k, "v")
		})
	}
}

// TestGoRedisReturnsByTheDeadline_CloseEndsADoInFlight: Close of a
// connection whose round trip hangs on a frozen server ends that Do at
// once, with an error that is not ErrNotWritten, whatever its ctx (a far
// deadline, or none: the engine's flat-combining caller) and the options.
func TestGoRedisReturnsByTheDeadline_CloseEndsADoInFlight(t *testing.T) {
	for name, opts := range ioOptions {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, _, client := private(t, false, opts)
			for _, ctx := range []context.Context{ctxFor(t, time.Minute), context.Background()} {
				cn := dial(t, newAdapter(t, client), srv.Addr)
				if _, err := do(ctxFor(t, 5*time.Second), cn, "PING"); err != nil {
					t.Fatal(err)
				}
				freeze(t, srv)
				done := make(chan error, 1)
				go func() { _, err := do(ctx, cn, "SET", key(t, "k"), "v"); done <- err }()
				time.Sleep(100 * time.Millisecond) // written, waiting for the reply
				start := time.Now()
				cn.Close()
				select {
				case err := <-done:
					if err == nil || errors.Is(err, conn.ErrNotWritten) {
						t.Fatalf("the Do Close ended: %v, want an error that is not ErrNotWritten", err)
					}
				case <-time.After(closeWait + doneWithin):
					t.Fatalf("the Do in flight still runs %v after Close", time.Since(start))
				}
				thaw(t, srv)
			}
		})
	}
}

// closeWait is how long Close may let a Do in flight run (closeBound).
const closeWait = closeBound

// eventuallyGet waits until k holds want.
func eventuallyGet(t *testing.T, client *redis.Client, k, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := client.Get(ctxFor(t, time.Second), k).Result()
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s = %q, %v; want %q", k, got, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBoundedLocksClose_GoRedisOptionsOnAFrozenServer: Locks.Close on a
// frozen server (SIGSTOP) with a keep-alive lock and a release in flight
// returns within CloseGrace + 1 s + FenceTimeout whatever the go-redis
// client's I/O options (ioOptions: with ContextTimeoutEnabled and no
// ReadTimeout it took until the server resumed, 60 s; with a 30 s
// ReadTimeout, 28.8 s).
func TestBoundedLocksClose_GoRedisOptionsOnAFrozenServer(t *testing.T) {
	const bound = lease.CloseGrace + time.Second + lease.FenceTimeout
	for name, opts := range ioOptions {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, _, client := private(t, false, opts)
			locks, err := New(client)
			if err != nil {
				t.Fatal(err)
			}
			held, err := locks.Acquire(ctxFor(t, 5*time.Second), key(t, "held"), 30*time.Second, lease.WithKeepAlive())
			if err != nil {
				t.Fatal(err)
			}
			released, err := locks.Acquire(ctxFor(t, 5*time.Second), key(t, "released"), 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			freeze(t, srv)
			go func() { _, _ = released.Release(context.Background()) }()
			time.Sleep(100 * time.Millisecond)
			start := time.Now()
			locks.Close()
			if took := time.Since(start); took > bound+doneWithin {
				t.Fatalf("Locks.Close took %v on a frozen server, want at most %v", took, bound)
			}
			_ = held
		})
	}
}

// TestGoRedisReturnsByTheDeadline_BoundedRoundTripsStayOnTheCallersGoroutine:
// a round trip of a dialled Conn that go-redis itself ends within
// closeBound and by its ctx's deadline (ContextTimeoutEnabled with 200 ms
// timeouts; or 300 ms ReadTimeout and WriteTimeout) runs on the caller's
// goroutine, whether its ctx has no deadline or a far one: no hand-off to
// the worker, whose two goroutine wake-ups per round trip are most of the
// adapter's latency over raw go-redis from one goroutine. One that go-redis
// would not end by its ctx's deadline (500 ms under 300 ms + 300 ms
// timeouts without ContextTimeoutEnabled), or not within closeBound (the
// default 5 s timeouts), runs on the worker.
func TestGoRedisReturnsByTheDeadline_BoundedRoundTripsStayOnTheCallersGoroutine(t *testing.T) {
	// Each ctx is made just before its round trip: a deadline made at the
	// test's start may have passed by the later cases on a loaded machine.
	none := func() context.Context { return context.Background() }
	far := func() context.Context { return ctxFor(t, time.Minute) }
	near := func() context.Context { return ctxFor(t, 500*time.Millisecond) }
	cases := []struct {
		name            string
		opts            func(*redis.Options)
		ctxs            []func() context.Context
		wantOnTheWorker bool
	}{
		{"ctx-deadlines-read-timeout", ioOptions["ctx-deadlines-read-timeout"], []func() context.Context{none, far, near}, false},
		{"timeouts-300ms", func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond }, []func() context.Context{none, far}, false},
		{"timeouts-300ms-near-deadline", func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond }, []func() context.Context{near}, true},
		{"defaults", ioOptions["defaults"], []func() context.Context{none, far}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _, client := private(t, false, tc.opts)
			var onTheWorker, sent atomic.Int32
			client.AddHook(workerSpy{onTheWorker: &onTheWorker, sent: &sent})
			cn := dial(t, newAdapter(t, client), srv.Addr)
			onTheWorker.Store(0)
			sent.Store(0)
			for _, ctx := range tc.ctxs {
				if _, err := do(ctx(), cn, "SET", key(t, "k"), "v"); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := onTheWorker.Load(), int32(0); tc.wantOnTheWorker {
				want = int32(len(tc.ctxs))
				if got != want || sent.Load() != want {
					t.Fatalf("%d of %d round trips ran on the worker, want all", got, sent.Load())
				}
			} else if got != want || sent.Load() != int32(len(tc.ctxs)) {
				t.Fatalf("%d of %d round trips ran on the worker, want none", got, sent.Load())
			}
		})
	}
}

// workerSpy is a user's hook that counts the commands go-redis sends, and
// those it sends on a gconn's worker goroutine.
type workerSpy struct{ onTheWorker, sent *atomic.Int32 }

func (workerSpy) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s workerSpy) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.sent.Add(1)
		pcs := make([]uintptr, 64)
		frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
		for f, more := frames.Next(); more; f, more = frames.Next() {
			if strings.HasSuffix(f.Function, ".(*gconn).worker") {
				s.onTheWorker.Add(1)
			}
		}
		return next(ctx, cmd)
	}
}

func (workerSpy) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
