package coordination

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/simtest"

	"github.com/respire-go/respire/internal/leakcheck"

	"github.com/respire-go/respire/internal/realserver"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/internal/wire"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m, leakcheck.RueidisBackground()...)
}

const simPassword = "pw"

// server is one server a test runs against: a sim profile (srv set) or the
// real redis-server 7.0 (srv nil).
type server struct {
	name   string
	srv    *sim.Server
	client rueidis.Client
	prefix string // keeps the real server's keys apart per test

	addr, password string // for more clients
}

// exec runs an admin command and returns its reply as text (":1", "$-1"
// becomes "", bulk strings bare, errors "-...").
func (s server) exec(t *testing.T, args ...string) string {
	t.Helper()
	msg, err := s.client.Do(ctxT(t), s.client.B().Arbitrary(args...).Build()).ToMessage()
	switch {
	case msg.IsNil():
		return ""
	case err != nil:
		return "-" + err.Error()
	case msg.IsInt64():
		n, _ := msg.AsInt64()
		return ":" + strconv.FormatInt(n, 10)
	}
	text, _ := msg.ToString()
	return text
}

// forEachServer runs fn against every sim profile and, when the environment
// names one, the real redis-server 7.0.
func forEachServer(t *testing.T, fn func(t *testing.T, s server)) {
	for _, p := range sim.Profiles {
		t.Run(string(p), func(t *testing.T) {
			srv := startSim(t, p)
			fn(t, server{name: string(p), srv: srv, client: newClient(t, []string{srv.Addr()}, simPassword),
				addr: srv.Addr(), password: simPassword})
		})
	}
	t.Run("real-redis-7.0", func(t *testing.T) {
		addr := os.Getenv("RESPIRE_REAL_REDIS70")
		if addr == "" {
			t.Skip("RESPIRE_REAL_REDIS70 not set: no real redis-server 7.0 to test against (the Makefile starts one)")
		}
		lockRealServer(t, addr)
		password := os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
		client := newClient(t, []string{addr}, password)
		prefix := "coordination-test:" + t.Name() + ":"
		s := server{name: "real-redis-7.0", client: client, prefix: prefix, addr: addr, password: password}
		deleteByPrefix(t, s)
		t.Cleanup(func() { deleteByPrefix(t, s) })
		fn(t, s)
	})
}

func deleteByPrefix(t *testing.T, s server) {
	keys, err := s.client.Do(ctxT(t), s.client.B().Keys().Pattern(s.prefix+"*").Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	for _, k := range keys {
		s.exec(t, "DEL", k)
	}
}

// lockRealServer serialises use of the shared real server across test
// binaries (see realserver.Lock).
func lockRealServer(t *testing.T, addr string) { realserver.Lock(t, addr) }

func startSim(t *testing.T, profile sim.Profile) *sim.Server {
	t.Helper()
	return simtest.Start(t, sim.Config{Profile: profile, Password: simPassword})
}

func newClient(t *testing.T, addrs []string, password string) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, Password: password})
	if err != nil {
		t.Fatalf("rueidis.NewClient: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

// lockClient returns a client of the root module's own (internal/wire) for
// the Locks under test on addrs (several: a cluster's nodes).
func lockClient(t *testing.T, addrs []string, password string) *wire.Client {
	t.Helper()
	client := wire.New(wire.Options{Addrs: addrs, Cluster: len(addrs) > 1, Password: password})
	t.Cleanup(client.Close)
	return client
}

// locksClient is lockClient of s's server.
func (s server) locksClient(t *testing.T) *wire.Client {
	return lockClient(t, []string{s.addr}, s.password)
}

// newCoordinator builds Locks (with prefix) and a Coordinator on client;
// the Locks is closed when the test ends.
func newCoordinator(t *testing.T, client conn.Client, prefix string) *Coordinator {
	t.Helper()
	root, err := lease.New(client)
	if err != nil {
		t.Fatalf("lease.New: %v", err)
	}
	t.Cleanup(root.Close)
	locks := root.WithKeyPrefix(prefix)
	c, err := New(locks)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fencedScripts counts the fenced-acquisition EVALSHA/EVAL commands in log.
func fencedScripts(log []sim.Entry) int {
	n := 0
	for _, e := range log {
		name := strings.ToUpper(e.Args[0])
		if (name == "EVALSHA" && e.Args[1] == conn.FencedAcquireScriptSHA) ||
			(name == "EVAL" && e.Args[1] == conn.FencedAcquireScript) {
			n++
		}
	}
	return n
}

// The lease and counter keys of the tests' fenced locks.
const (
	leaseKey   = "{job}:lease"
	counterKey = "{job}:fence"
)

// simCoordinator starts a sim server of profile with the fenced script
// already cached (so the one command is EVALSHA) and a Coordinator on it.
func simCoordinator(t *testing.T, profile sim.Profile) (*sim.Server, *Coordinator) {
	t.Helper()
	srv := startSim(t, profile)
	srv.Exec("SCRIPT", "LOAD", conn.FencedAcquireScript)
	return srv, newCoordinator(t, lockClient(t, []string{srv.Addr()}, simPassword), "")
}

// fencedResource is what a protected resource must do: accept a write only
// when its token is >= the largest accepted so far, atomically.
type fencedResource struct {
	mu   sync.Mutex
	last int64
}

var errStaleToken = errors.New("stale fencing token")

func (r *fencedResource) write(token int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token <= 0 || token < r.last {
		return errStaleToken
	}
	r.last = token
	return nil
}

// isFencedScript reports whether args are the fenced acquisition script.
func isFencedScript(args []string) bool {
	if len(args) < 3 {
		return false
	}
	name := strings.ToUpper(args[0])
	return (name == "EVALSHA" || name == "EVAL") &&
		(args[1] == conn.FencedAcquireScriptSHA || args[1] == conn.FencedAcquireScript)
}
