package leasesuite

import (
	"github.com/respire-go/respire/coordination"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/respire-go/respire/internal/simtest"

	"github.com/respire-go/respire/internal/realserver"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// coordLocks maps each Coordinator newCoordinator built to its Locks.
var coordLocks sync.Map

// locksOf returns the Locks under c (built by newCoordinator).
func locksOf(c *coordination.Coordinator) *lease.Locks {
	l, _ := coordLocks.Load(c)
	return l.(*lease.Locks)
}

// server is one server a test runs against: a sim profile (srv set) or the
// real redis-server 7.0 (srv nil).
type coordServer struct {
	name   string
	srv    *sim.Server
	client rueidis.Client
	prefix string // keeps the real server's keys apart per test

	addr, password string // for more clients
}

// exec runs an admin command and returns its reply as text (":1", "$-1"
// becomes "", bulk strings bare, errors "-...").
func (s coordServer) exec(t *testing.T, args ...string) string {
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
func forEachCoordServer(t *testing.T, tr Transport, fn func(t *testing.T, s coordServer)) {
	for _, p := range sim.Profiles {
		t.Run(string(p), func(t *testing.T) {
			srv := startCoordSim(t, p)
			fn(t, coordServer{name: string(p), srv: srv, client: coordClient(t, []string{srv.Addr()}, simPassword),
				addr: srv.Addr(), password: simPassword})
		})
	}
	t.Run("real-redis-7.0", func(t *testing.T) {
		addr := os.Getenv("RESPIRE_REAL_REDIS70")
		if addr == "" {
			t.Skip("RESPIRE_REAL_REDIS70 not set: no real redis-server 7.0 to test against (the Makefile starts one)")
		}
		realserver.Lock(t, addr)
		password := os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
		client := coordClient(t, []string{addr}, password)
		prefix := "coordination-test:" + t.Name() + ":"
		s := coordServer{name: "real-redis-7.0", client: client, prefix: prefix, addr: addr, password: password}
		deleteByPrefix(t, s)
		t.Cleanup(func() { deleteByPrefix(t, s) })
		fn(t, s)
	})
}

func deleteByPrefix(t *testing.T, s coordServer) {
	keys, err := s.client.Do(ctxT(t), s.client.B().Keys().Pattern(s.prefix+"*").Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	for _, k := range keys {
		s.exec(t, "DEL", k)
	}
}

func startCoordSim(t *testing.T, profile sim.Profile) *sim.Server {
	t.Helper()
	return simtest.Start(t, sim.Config{Profile: profile, Password: simPassword})
}

func coordClient(t *testing.T, addrs []string, password string) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, Password: password})
	if err != nil {
		t.Fatalf("rueidis.NewClient: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

// newCoordinator builds Locks (with prefix) and a Coordinator on client;
// the Locks is closed when the test ends.
func newCoordinator(t *testing.T, tr Transport, addrs []string, password, prefix string,
	opts ...lease.Option) *coordination.Coordinator {
	t.Helper()
	locks := newLocks(t, tr, clientOf(addrs, "", password, false), opts...).WithKeyPrefix(prefix)
	c, err := coordination.New(locks)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	coordLocks.Store(c, locks)
	t.Cleanup(func() { coordLocks.Delete(c) })
	return c
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

// isRelease reports whether e is a compare-and-delete of key.
func isRelease(key string) func(sim.Entry) bool {
	return func(e sim.Entry) bool {
		name := strings.ToUpper(e.Args[0])
		switch {
		case name == "DELEX" || name == "DELIFEQ":
			return e.Args[1] == key
		case name == "EVALSHA" || name == "EVAL":
			return (e.Args[1] == conn.ReleaseScriptSHA || e.Args[1] == conn.ReleaseScript) && e.Args[3] == key
		}
		return false
	}
}
