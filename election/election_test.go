package election

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/respire-go/respire/internal/leakcheck"
	"github.com/respire-go/respire/internal/wire"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(m.Run()) // a candidate process: no leak check of its own
	}
	goleak.VerifyTestMain(m, leakcheck.RueidisBackground()...)
}

const simPassword = "pw"

// server is where an election runs: an in-process sim node, or the real
// redis-server 7.0 of scripts/with-servers.sh.
type server struct {
	name, addr, password string
	ttl                  time.Duration // the leadership lease the tests use on it
	exec                 func(args ...string) string
}

// servers returns a sim node (lease 1 s, to keep the tests short) and, when
// the environment names one, the real Redis 7.0 (lease 4 s, as the issue's
// figures).
func servers(t *testing.T) []server {
	t.Helper()
	srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Valkey90, Password: simPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	out := []server{{name: "sim-valkey-9.0", addr: srv.Addr(), password: simPassword, ttl: time.Second,
		exec: func(args ...string) string { return srv.Exec(args...) }}}
	if addr := os.Getenv("RESPIRE_REAL_REDIS70"); addr != "" {
		password := os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
		client := newClient(t, addr, password)
		out = append(out, server{name: "real-redis-7.0", addr: addr, password: password, ttl: 4 * time.Second,
			exec: func(args ...string) string {
				s, _ := client.Do(context.Background(), client.B().Arbitrary(args...).Build()).ToString()
				return s
			}})
	}
	return out
}

func newClient(t testing.TB, addr, password string) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

// newLocks returns Locks on a client of its own (the root module's,
// internal/wire), closed when the test ends.
func newLocks(t testing.TB, addr, password string, opts ...lease.Option) *lease.Locks {
	t.Helper()
	locks, err := lease.New(wire.New(wire.Options{Addrs: []string{addr}, Password: password}), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(locks.Close)
	return locks
}

func newElection(t testing.TB, locks *lease.Locks, key string, ttl time.Duration) *Election {
	t.Helper()
	e, err := New(locks, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// next receives from ch within 10 s.
func next(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case label, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the channel closed", what)
		}
		return label
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	return ""
}

// TestElectionOneLeader_CampaignResignObserve: a candidate's Campaign
// returns once it leads; a second candidate's blocks until the first
// resigns; Leader tells the leader's label, Observe each new leader's in
// turn, with push and without; a Campaign while leading is refused, and
// Resign ends the leadership's Context.
func TestElectionOneLeader_CampaignResignObserve(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []lease.Option
	}{{"push", nil}, {"polling", []lease.Option{lease.WithoutPush()}}} {
		t.Run(tc.name, func(t *testing.T) {
			s := servers(t)[0]
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			a := newElection(t, newLocks(t, s.addr, s.password, tc.opts...), "election:"+tc.name, time.Minute)
			b := newElection(t, newLocks(t, s.addr, s.password, tc.opts...), "election:"+tc.name, time.Minute)
			if _, err := a.Leader(ctx); !errors.Is(err, ErrNoLeader) {
				t.Fatalf("Leader before any campaign = %v; want ErrNoLeader", err)
			}
			if cause := context.Cause(a.Context()); !errors.Is(cause, ErrNotLeader) {
				t.Fatalf("Context before Campaign: cause %v; want ErrNotLeader", cause)
			}
			if err := a.Campaign(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			if err := a.Campaign(ctx, "a"); !errors.Is(err, ErrCampaigning) {
				t.Fatalf("Campaign while leading = %v; want ErrCampaigning", err)
			}
			observed := b.Observe(ctx)
			if got := next(t, observed, "the first leader"); got != "a" {
				t.Fatalf("Observe = %q; want a", got)
			}
			won := make(chan error, 1)
			go func() { won <- b.Campaign(ctx, "b") }()
			if leader, err := b.Leader(ctx); leader != "a" || err != nil {
				t.Fatalf("Leader = %q, %v; want a", leader, err)
			}
			leadership := a.Context()
			if err := a.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-won; err != nil {
				t.Fatalf("b's Campaign = %v", err)
			}
			if !errors.Is(context.Cause(leadership), lease.ErrReleased) {
				t.Fatalf("a's leadership ended with %v; want lease.ErrReleased", context.Cause(leadership))
			}
			if got := next(t, observed, "the next leader"); got != "b" {
				t.Fatalf("Observe = %q; want b", got)
			}
			if leader, err := a.Leader(ctx); leader != "b" || err != nil {
				t.Fatalf("Leader = %q, %v; want b", leader, err)
			}
			if err := b.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			if err := b.Resign(ctx); err != nil {
				t.Fatalf("a second Resign = %v; want nil", err)
			}
			if _, err := b.Leader(ctx); !errors.Is(err, ErrNoLeader) {
				t.Fatalf("Leader after both resigned = %v; want ErrNoLeader", err)
			}
			cancel()
			for range observed { // closed once ctx ended
			}
		})
	}
}

// TestElectionOneLeader_CampaignEndsWithItsCtx: a Campaign against a held
// key returns ctx's cause when ctx ends, and leads nothing; bad input is
// refused by New and Campaign.
func TestElectionOneLeader_CampaignEndsWithItsCtx(t *testing.T) {
	s := servers(t)[0]
	locks := newLocks(t, s.addr, s.password)
	s.exec("SET", "election:held", "someone", "PX", "60000")
	e := newElection(t, locks, "election:held", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := e.Campaign(ctx, "c"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Campaign = %v; want context.DeadlineExceeded", err)
	}
	if e.Context().Err() == nil {
		t.Fatal("leading after a failed Campaign")
	}
	if err := e.Campaign(context.Background(), "bad\nlabel"); !errors.Is(err, lease.ErrInvalidOption) {
		t.Fatalf("Campaign with a newline in the label = %v; want lease.ErrInvalidOption", err)
	}
	for _, tc := range []struct {
		locks *lease.Locks
		key   string
		ttl   time.Duration
	}{{nil, "k", time.Second}, {locks, "", time.Second}, {locks, "k", 0}} {
		if _, err := New(tc.locks, tc.key, tc.ttl); err == nil {
			t.Errorf("New(%v, %q, %v) succeeded", tc.locks, tc.key, tc.ttl)
		}
	}
}
