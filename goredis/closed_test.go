package goredis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// refusedWithin bounds "at once" on a loaded machine: a refusal that
// sends nothing takes microseconds.
const refusedWithin = 50 * time.Millisecond

// firstRefusedWithin bounds the first call after the Close when it comes
// before the adapter's next probe (probeEvery): it meets the socket
// go-redis closed, and go-redis v9.23 (RESP3) retries a command whose
// pre-write push drain failed on it after its retry backoff (at most
// MaxRetryBackoff, 512 ms): not sent, but not at once.
const firstRefusedWithin = time.Second

// TestClientClosed_GoRedisCallsFailAtOnceNothingSent: once the user's
// go-redis client is closed, under Locks that already have their
// connections, every call — a mutex, a semaphore permit, a release, a
// holder's read — fails with an error matching lease.ErrClientClosed that
// names go-redis (never rueidis), at once (the first one within go-redis'
// retry backoff), and none reaches the server.
func TestClientClosed_GoRedisCallsFailAtOnceNothingSent(t *testing.T) {
	srv, _, client := private(t, false)
	locks, err := New(client)
	if err != nil {
		t.Fatal(err)
	}
	defer locks.Close()
	ctx := ctxFor(t, 10*time.Second)
	held, err := locks.Acquire(ctx, key(t, "held"), 30*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locks.Semaphore(key(t, "sem"), 2).Acquire(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	_ = client.Close()
	srv.MustExec(t, "CONFIG", "RESETSTAT")
	calls := map[string]func() error{
		"mutex": func() error { _, err := locks.TryAcquire(ctx, key(t, "m"), 10*time.Second); return err },
		"permit": func() error {
			_, err := locks.Semaphore(key(t, "sem"), 2).TryAcquire(ctx, 10*time.Second)
			return err
		},
		"release": func() error { _, err := held.Release(ctx); return err },
		"holder":  func() error { _, _, err := locks.Holder(ctx, key(t, "m")); return err },
	}
	first := true
	for _, name := range []string{"mutex", "permit", "release", "holder"} {
		call := calls[name]
		bound := refusedWithin
		if first {
			bound, first = firstRefusedWithin, false
		}
		start := time.Now()
		err := call()
		took := time.Since(start)
		if !errors.Is(err, lease.ErrClientClosed) || !strings.Contains(err.Error(), "go-redis") ||
			strings.Contains(err.Error(), "rueidis") {
			t.Errorf("%s after the client closed: %v; want lease.ErrClientClosed naming go-redis", name, err)
		}
		if took > bound {
			t.Errorf("%s took %v to be refused, want at once", name, took)
		}
	}
	info := srv.MustExec(t, "INFO", "commandstats")
	for _, cmd := range []string{"set", "eval", "evalsha", "get", "del", "zadd"} {
		if strings.Contains(info, "cmdstat_"+cmd+":") {
			t.Errorf("%s reached the server after the client closed:\n%s", cmd, info)
		}
	}
}

// TestClientClosed_GoRedisAdapterSaysSoWithoutSending: the adapter's
// Closed answers redis.ErrClosed at once after the client's Close (its
// probe, a PING under a ctx already cancelled, sends nothing either way),
// and a connection dialled before fails its next round trip with
// ErrNotWritten and a *conn.ClientClosedError naming go-redis.
func TestClientClosed_GoRedisAdapterSaysSoWithoutSending(t *testing.T) {
	srv, _, client := private(t, false)
	c := newAdapter(t, client)
	cn := dial(t, c, srv.Addr)
	if _, err := do(ctxFor(t, 5*time.Second), cn, "PING"); err != nil {
		t.Fatal(err)
	}
	if err := c.Closed(); err != nil {
		t.Fatalf("Closed of an open client: %v", err)
	}
	srv.MustExec(t, "CONFIG", "RESETSTAT")
	if err := c.probe(); err != nil {
		t.Fatalf("probe of an open client: %v", err)
	}
	if info := srv.MustExec(t, "INFO", "commandstats"); strings.Contains(info, "cmdstat_ping:") {
		t.Fatalf("the probe reached the server:\n%s", info)
	}
	_ = client.Close()
	c.lastProbe.Store(0) // as in a process younger than probeEvery: the next Closed asks
	if err := c.Closed(); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("Closed after the client's Close: %v, want redis.ErrClosed", err)
	}
	var closed *conn.ClientClosedError
	_, err := do(context.Background(), cn, "SET", key(t, "k"), "v")
	if !errors.Is(err, conn.ErrNotWritten) || !errors.As(err, &closed) || closed.Client != "go-redis" {
		t.Fatalf("a round trip after the client's Close: %v, want ErrNotWritten and a ClientClosedError", err)
	}
	if _, err := c.Dial(ctxFor(t, time.Second), srv.Addr); !errors.Is(err, conn.ErrClientClosed) {
		t.Fatalf("Dial after the client's Close: %v, want ErrClientClosed", err)
	}
}
