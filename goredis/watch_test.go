package goredis

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/realserver"
)

// TestGoRedisWatcherEndIsTold_EveryEnd: a watcher that served a read
// tells the handler (keys nil) when it ends — a FLUSHALL's null
// invalidation, every connection killed, its reader killed alone (found by
// the reader's idle PING) — and the next read opens a fresh one.
func TestGoRedisWatcherEndIsTold_EveryEnd(t *testing.T) {
	ends := map[string]func(t *testing.T, srv *realserver.Private){
		"flushall": func(t *testing.T, srv *realserver.Private) { srv.MustExec(t, "FLUSHALL") },
		"kill-all": func(t *testing.T, srv *realserver.Private) {
			srv.MustExec(t, "CLIENT", "KILL", "TYPE", "normal")
		},
		"kill-reader": func(t *testing.T, srv *realserver.Private) {
			for _, line := range strings.Split(srv.MustExec(t, "CLIENT", "LIST"), "\n") {
				if strings.Contains(line, "flags=t") {
					id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
					srv.MustExec(t, "CLIENT", "KILL", "ID", id)
				}
			}
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			srv, _, client := private(t, false)
			tr := idleEngine(t, client, 50*time.Millisecond)
			told := make(chan []string, 16)
			tr.SetInvalidationHandler(func(_ string, keys []string) { told <- keys })
			k := key(t, "k")
			if _, _, _, err := tr.WatchRead(ctxFor(t, 5*time.Second), k); err != nil {
				t.Fatal(err)
			}
			end(t, srv)
			select {
			case keys := <-told:
				if keys != nil {
					t.Fatalf("told %q, want nil (everything forgotten)", keys)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the watcher's end was not told")
			}
			if _, _, _, err := tr.WatchRead(ctxFor(t, 5*time.Second), k); err != nil {
				t.Fatalf("read after the end: %v", err)
			}
			srv.MustExec(t, "SET", k, "v")
			select {
			case keys := <-told:
				if len(keys) != 1 || keys[0] != k {
					t.Fatalf("told %q, want the key", keys)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the fresh watcher did not push")
			}
			_ = conn.ErrTrackingRefused
		})
	}
}

// TestGoRedisWatcherLeavesUserClient_HandlerFreeAndNothingRunning: the
// listener is a private client of its own: the user's client's push
// processor stays free for the user's own "invalidate" handler (its
// client-side cache), and Close leaves no goroutine of the transport
// running, while the user's client stays open.
func TestGoRedisWatcherLeavesUserClient_HandlerFreeAndNothingRunning(t *testing.T) {
	_, _, client := private(t, false)
	before := runtime.NumGoroutine()
	tr := conn.NewEngine(conn.EngineConfig{Client: newAdapter(t, client)})
	tr.SetIdleCheck(20 * time.Millisecond)
	k := key(t, "k")
	if _, _, _, err := tr.WatchRead(ctxFor(t, 5*time.Second), k); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Do(ctxFor(t, 5*time.Second), conn.AcquireOp(k, "tok", 1000), nil); err != nil {
		t.Fatal(err)
	}
	if err := client.RegisterPushNotificationHandler("invalidate", invalidateHandler{&listener{}}, false); err != nil {
		t.Fatalf("the user's client's push processor was taken: %v", err)
	}
	tr.Close()
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

// TestGoRedisWatcherNeedsNoPing_LeastPrivilegeUserIsPushed: a user with
// the ACL line of docs/compatibility.md plus +client|tracking
// +client|caching, and no +ping, is pushed: the NOPERM that answers the
// listener's PING (sent to open its connection) is an answer, not the
// listener's end, so the next change of a read key is told as that key,
// and no end is told.
func TestGoRedisWatcherNeedsNoPing_LeastPrivilegeUserIsPushed(t *testing.T) {
	srv, _, admin := private(t, false)
	srv.MustExec(t, "ACL", "SETUSER", "locker", "on", ">lockerpw", "~*", "+set", "+get", "+evalsha", "+eval",
		"+del", "+pexpire", "+client|id", "+client|info", "+client|kill", "+client|tracking", "+client|caching")
	client := goredisClient(t, srv.Addr, "lockerpw", func(o *redis.Options) { o.Username = "locker" })
	tr := newEngine(t, client)
	told := make(chan []string, 16)
	tr.SetInvalidationHandler(func(_ string, keys []string) { told <- keys })
	k := key(t, "k")
	if _, _, _, err := tr.WatchRead(ctxFor(t, 5*time.Second), k); err != nil {
		t.Fatal(err)
	}
	if err := admin.Set(ctxFor(t, 5*time.Second), k, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case keys := <-told:
		if len(keys) != 1 || keys[0] != k {
			t.Fatalf("told %q, want the key (nil: the watcher ended)", keys)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the change was not pushed")
	}
}

// TestGoRedisCallerNeverWaitsOnTheSocket_TrackedReadOnAFrozenServer: a
// tracked read whose ctx ends while its round trip hangs on a frozen
// server returns at once, not submitted, and its watcher goes on; Close
// then ends at once, well before the client's ReadTimeout, both the round
// trip still on the wire and a read (ctx without end) queued behind it:
// the watcher's connections are its own clients', which Close closes.
func TestGoRedisCallerNeverWaitsOnTheSocket_TrackedReadOnAFrozenServer(t *testing.T) {
	srv, _, client := private(t, false, func(o *redis.Options) { o.ReadTimeout = 3 * time.Second })
	tr := newEngine(t, client)
	k := key(t, "k")
	if _, _, _, err := tr.WatchRead(ctxFor(t, 5*time.Second), k); err != nil {
		t.Fatal(err)
	}
	freeze(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, _, _, err := tr.WatchRead(ctx, k); first <- err }()
	time.Sleep(50 * time.Millisecond) // the read is on the wire
	start := time.Now()
	cancel()
	if err := <-first; conn.ClassOf(err) != conn.NotSubmitted || time.Since(start) > time.Second {
		t.Fatalf("cancelled read: %v (%s) after %v, want not submitted at once", err, classOf(err), time.Since(start))
	}
	queued := make(chan error, 1)
	go func() { _, _, _, err := tr.WatchRead(context.Background(), k); queued <- err }()
	time.Sleep(50 * time.Millisecond) // waiting for the reader
	start = time.Now()
	tr.Close()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close took %v: it waited for the read on the wire", took)
	}
	select {
	case err := <-queued:
		if conn.ClassOf(err) != conn.NotSubmitted {
			t.Fatalf("queued read: %v (%s), want not submitted", err, classOf(err))
		}
	case <-time.After(time.Second):
		t.Fatal("the queued read did not end with Close")
	}
}

// TestGoRedisCallerNeverWaitsOnTheSocket_WatcherOpenOnAFrozenServer: the
// first tracked read of a node whose server is frozen returns at its ctx's
// end, not submitted, while the watcher's open goes on; Close ends that
// open at once (it closes the watcher's private clients), well before the
// client's ReadTimeout.
func TestGoRedisCallerNeverWaitsOnTheSocket_WatcherOpenOnAFrozenServer(t *testing.T) {
	srv, _, client := private(t, false, func(o *redis.Options) { o.ReadTimeout = 3 * time.Second })
	tr := newEngine(t, client)
	freeze(t, srv)
	start := time.Now()
	_, _, _, err := tr.WatchRead(ctxFor(t, 200*time.Millisecond), key(t, "k"))
	if conn.ClassOf(err) != conn.NotSubmitted || time.Since(start) > time.Second {
		t.Fatalf("read: %v (%s) after %v, want not submitted at its deadline", err, classOf(err), time.Since(start))
	}
	start = time.Now()
	tr.Close()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close took %v: it waited for the watcher's open", took)
	}
}
