package leasetest_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

// TestKitClosesAtTestEnd_EverythingItHandedOut: a test that ends with the
// server paused and a keep-alive lock held leaves nothing behind: its
// cleanup resumes the server, closes the Locks and the clients, then the
// server (TestMain checks that no goroutine is left).
func TestKitClosesAtTestEnd_EverythingItHandedOut(t *testing.T) {
	var (
		addr   string
		locks  *lease.Locks
		client conn.Client
		ended  time.Time
	)
	t.Run("test", func(t *testing.T) {
		srv := leasetest.Start(t, leasetest.WithProfile(sim.Redis84))
		addr, locks, client = srv.Addr(), srv.Locks(), srv.Client()
		if err := client.Closed(); err != nil {
			t.Fatalf("the client while the test runs: Closed = %v", err)
		}
		if _, err := locks.Acquire(t.Context(), "report", 30*time.Second, lease.WithKeepAlive()); err != nil {
			t.Fatal(err)
		}
		srv.Pause()
		ended = time.Now()
	})
	t.Logf("cleanup took %v", time.Since(ended)) // about 1 s per connection if it did not resume first
	if _, err := locks.TryAcquire(context.Background(), "other", time.Second); !errors.Is(err, lease.ErrClosed) {
		t.Errorf("the Locks after the test: TryAcquire = %v, want ErrClosed", err)
	}
	if err := client.Closed(); err == nil {
		t.Error("the client after the test: Closed = nil, want it closed")
	}
	if c, err := net.DialTimeout("tcp", addr, bound); err == nil {
		c.Close()
		t.Errorf("the server still accepts connections on %s", addr)
	}
}

// TestKitClosesAtTestEnd_ClientAndLocksConnect: Addr and Password reach
// the server (a client of the program's own, rueidis here), a wrong
// password does not, and Locks on Client and Locks take locks there.
func TestKitClosesAtTestEnd_ClientAndLocksConnect(t *testing.T) {
	srv := leasetest.Start(t)
	if srv.Password() == "" || !strings.HasPrefix(srv.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr %q, password set %v; want loopback and a password", srv.Addr(), srv.Password() != "")
	}
	opt := rueidis.ClientOption{InitAddress: []string{srv.Addr()}, Password: "wrong"}
	if c, err := rueidis.NewClient(opt); err == nil {
		c.Close()
		t.Error("a client with a wrong password connected")
	}
	opt.Password = srv.Password()
	own, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if got, err := own.Do(t.Context(), own.B().Ping().Build()).ToString(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	onClient, err := lease.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer onClient.Close()
	for _, locks := range []*lease.Locks{srv.Locks(), onClient} {
		attempt, err := locks.TryAcquire(t.Context(), "report", time.Second)
		if err != nil || !attempt.Acquired() {
			t.Fatalf("TryAcquire = %v, %v; want acquired", attempt, err)
		}
		attempt.Close()
	}
}

// TestKitClosesAtTestEnd_NewServerNeedsClose: NewServer panics on an
// unknown profile; after Close, Client and Locks panic and the address is
// closed.
func TestKitClosesAtTestEnd_NewServerNeedsClose(t *testing.T) {
	if msg := panicked(func() { leasetest.NewServer(leasetest.WithProfile("redis-6.2")) }); msg == "" {
		t.Error("NewServer(redis-6.2) did not panic")
	}
	srv := leasetest.NewServer(leasetest.WithProfile(sim.Valkey90))
	locks := srv.Locks()
	srv.Close()
	srv.Close() // idempotent
	if _, err := locks.TryAcquire(context.Background(), "report", time.Second); !errors.Is(err, lease.ErrClosed) {
		t.Errorf("TryAcquire after Close = %v, want ErrClosed", err)
	}
	for name, call := range map[string]func(){"Client": func() { srv.Client() }, "Locks": func() { srv.Locks() }} {
		if msg := panicked(call); !strings.HasPrefix(msg, "leasetest: ") {
			t.Errorf("%s after Close: panic %q, want a leasetest: panic", name, msg)
		}
	}
}

// panicked runs f and returns what it panicked with, "" if nothing.
func panicked(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = strings.TrimSpace(strings.TrimPrefix(toString(r), " "))
		}
	}()
	f()
	return ""
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if err, ok := v.(error); ok {
		return err.Error()
	}
	return "panic"
}
