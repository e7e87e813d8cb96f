package goredis

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// listen opens a listener of c on node whose calls arrive on the returned
// channel, closed at test end.
func listen(t *testing.T, c *client, node string) (conn.Listener, <-chan []string) {
	t.Helper()
	told := make(chan []string, 16)
	l, err := c.Listen(ctxFor(t, 5*time.Second), node, func(keys []string) { told <- keys })
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(l.Close)
	if l.Conn() != nil || l.ID() <= 0 {
		t.Fatalf("a go-redis listener: Conn %v, ID %d; want nil and a CLIENT ID", l.Conn(), l.ID())
	}
	return l, told
}

// track reads k on cn with CLIENT TRACKING ON REDIRECT to l (OPTIN: the
// read right after CLIENT CACHING YES is tracked).
func track(t *testing.T, cn conn.Conn, l conn.Listener, k string) {
	t.Helper()
	cmds := []conn.Command{{Args: []string{"CLIENT", "TRACKING", "ON", "REDIRECT", strconv.FormatInt(l.ID(), 10), "OPTIN", "NOLOOP"}},
		{Args: []string{"CLIENT", "CACHING", "YES"}}, {Args: []string{"GET", k}}}
	replies := make([]conn.Reply, len(cmds))
	if err := cn.Do(ctxFor(t, 5*time.Second), cmds, replies); err != nil {
		t.Fatal(err)
	}
	for _, r := range replies {
		if r.Kind == conn.ReplyError {
			t.Fatalf("tracking: %s", r.Text)
		}
	}
}

// told waits for fn's next call.
func told(t *testing.T, ch <-chan []string) []string {
	t.Helper()
	select {
	case keys := <-ch:
		return keys
	case <-time.After(5 * time.Second):
		t.Fatal("fn was not called")
		return nil
	}
}

// TestGoRedisWatcherEndIsTold_ListenerInvalidationsFlushAndKill: a listener hands
// fn the keys of each invalidation of a key tracked with REDIRECT to its
// ID, nil for a FLUSHALL's null invalidation (and goes on), and nil once
// its connection ends (CLIENT KILL), after which fn is never called again.
func TestGoRedisWatcherEndIsTold_ListenerInvalidationsFlushAndKill(t *testing.T) {
	srv, _, client := private(t, false)
	c := newAdapter(t, client)
	l, ch := listen(t, c, srv.Addr)
	cn := dial(t, c, srv.Addr)
	k := key(t, "k")
	track(t, cn, l, k)
	srv.MustExec(t, "SET", k, "v")
	if keys := told(t, ch); len(keys) != 1 || keys[0] != k {
		t.Fatalf("told %q, want [%s]", keys, k)
	}
	track(t, cn, l, k)
	srv.MustExec(t, "FLUSHALL")
	if keys := told(t, ch); keys != nil {
		t.Fatalf("FLUSHALL: told %q, want nil", keys)
	}
	track(t, cn, l, k)
	srv.MustExec(t, "SET", k, "w")
	if keys := told(t, ch); len(keys) != 1 || keys[0] != k {
		t.Fatalf("after FLUSHALL: told %q, want [%s]", keys, k)
	}
	srv.MustExec(t, "CLIENT", "KILL", "ID", strconv.FormatInt(l.ID(), 10))
	if keys := told(t, ch); keys != nil {
		t.Fatalf("the end: told %q, want nil", keys)
	}
	select {
	case keys := <-ch:
		t.Fatalf("told %q after the end", keys)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestGoRedisWatcherNeedsNoPing_ListenerOfALeastPrivilegeUser: a user with
// the ACL line of docs/compatibility.md plus +client|tracking
// +client|caching, and no +ping, is pushed: the NOPERM that answers the
// listener's PING (sent to open its connection) is an answer, not the
// listener's end.
func TestGoRedisWatcherNeedsNoPing_ListenerOfALeastPrivilegeUser(t *testing.T) {
	srv, _, _ := private(t, false)
	srv.MustExec(t, "ACL", "SETUSER", "locker", "on", ">lockerpw", "~*", "+set", "+get", "+evalsha", "+eval",
		"+del", "+pexpire", "+client|id", "+client|info", "+client|kill", "+client|tracking", "+client|caching")
	client := goredisClient(t, srv.Addr, "lockerpw", func(o *redis.Options) { o.Username = "locker" })
	c := newAdapter(t, client)
	l, ch := listen(t, c, srv.Addr)
	k := key(t, "k")
	track(t, dial(t, c, srv.Addr), l, k)
	srv.MustExec(t, "SET", k, "v")
	if keys := told(t, ch); len(keys) != 1 || keys[0] != k {
		t.Fatalf("told %q, want [%s] (nil: the listener ended)", keys, k)
	}
}

// TestGoRedisWatcherLeavesUserClient_ListenerHandlerFreeAndNothingRunning: the
// listener is a private client of its own: the user's client's push
// processor stays free for the user's own "invalidate" handler, and Close
// leaves no goroutine of the listener running, nor calls fn, while the
// user's client stays open.
func TestGoRedisWatcherLeavesUserClient_ListenerHandlerFreeAndNothingRunning(t *testing.T) {
	srv, _, client := private(t, false)
	before := runtime.NumGoroutine()
	l, err := newAdapter(t, client).Listen(ctxFor(t, 5*time.Second), srv.Addr, func(keys []string) {
		t.Errorf("fn called with %q", keys)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.RegisterPushNotificationHandler("invalidate", invalidateHandler{&listener{}}, false); err != nil {
		t.Fatalf("the user's client's push processor was taken: %v", err)
	}
	l.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	if err := client.Ping(ctxFor(t, time.Second)).Err(); err != nil {
		t.Fatalf("the user's client after Close: %v", err)
	}
}

// TestGoRedisCallerNeverWaitsOnTheSocket_ListenerOpensWithinItsCtx: on a frozen server
// (SIGSTOP) Listen returns at its ctx's deadline, and at once when its ctx
// is cancelled (go-redis honours no cancellation: the listener's sockets
// are closed under it), whatever the client's ReadTimeout.
func TestGoRedisCallerNeverWaitsOnTheSocket_ListenerOpensWithinItsCtx(t *testing.T) {
	srv, _, client := private(t, false, func(o *redis.Options) { o.ReadTimeout = 30 * time.Second })
	c := newAdapter(t, client)
	freeze(t, srv)
	start := time.Now()
	if _, err := c.Listen(ctxFor(t, 300*time.Millisecond), srv.Addr, func([]string) {}); err == nil ||
		time.Since(start) > 300*time.Millisecond+doneWithin {
		t.Fatalf("Listen: %v after %v, want an error at the deadline", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start = time.Now()
	if _, err := c.Listen(ctx, srv.Addr, func([]string) {}); !errors.Is(err, context.Canceled) ||
		time.Since(start) > 200*time.Millisecond+doneWithin {
		t.Fatalf("Listen: %v after %v, want context.Canceled at the cancellation", err, time.Since(start))
	}
}
