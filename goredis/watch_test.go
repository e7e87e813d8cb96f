package goredis

import (
	"runtime"
	"strings"
	"testing"
	"time"

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
			tr := newTransport(t, client, WithIdleCheck(50*time.Millisecond))
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
	tr, err := NewTransport(client, WithIdleCheck(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	k := key(t, "k")
	if _, _, _, err := tr.WatchRead(ctxFor(t, 5*time.Second), k); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Do(ctxFor(t, 5*time.Second), conn.AcquireOp(k, "tok", 1000), nil); err != nil {
		t.Fatal(err)
	}
	if err := client.RegisterPushNotificationHandler("invalidate", invalidateHandler{}, false); err != nil {
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

// TestGoRedisOneWatcherPerNode_ASecondOpenKeepsTheFirst: a watcher opened
// for a node that got a live one meanwhile (a caller that looked before the
// first was installed, and whose open started after the first's ended) is
// closed and the first one used; Close then ends every watcher opened,
// and returns.
func TestGoRedisOneWatcherPerNode_ASecondOpenKeepsTheFirst(t *testing.T) {
	_, _, client := private(t, false)
	tr, err := NewTransport(client)
	if err != nil {
		t.Fatal(err)
	}
	node := client.Options().Addr
	first, err := tr.openTracked(ctxFor(t, 5*time.Second), node)
	if err != nil {
		t.Fatal(err)
	}
	second, err := tr.openTracked(ctxFor(t, 5*time.Second), node)
	if err != nil {
		t.Fatal(err)
	}
	if second != first || first.ended.Load() {
		t.Fatalf("the second open gave %p, want the live first one %p", second, first)
	}
	closed := make(chan struct{})
	go func() { tr.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close still waits for a watcher 5 s on: one was replaced and closed by nobody")
	}
}
