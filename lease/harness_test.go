package lease

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/simtest"

	"github.com/respire-go/respire/internal/leakcheck"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/wire"

	"github.com/respire-go/respire/sim"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m, leakcheck.RueidisBackground()...)
}

const simPassword = "pw"

// lockCommandNames are the commands a lock operation may put on the wire.
var lockCommandNames = []string{"SET", "GET", "DELEX", "DELIFEQ", "EVALSHA", "EVAL", "ASKING"}

// startSim starts a simulated node (default password simPassword) and checks,
// when the test ends, that no INFO or COMMAND was ever sent to it.
func startSim(t *testing.T, cfg sim.Config) *sim.Server {
	t.Helper()
	if cfg.Password == "" {
		cfg.Password = simPassword
	}
	return simtest.Start(t, cfg)
}

func assertNoDiscoveryCommands(t *testing.T, log []sim.Entry) {
	t.Helper()
	simtest.AssertNoDiscoveryCommands(t, log)
}

// newClient returns a client of the root module's own (internal/wire) for
// addrs (several: a cluster's nodes); the last argument is unused (it
// turned rueidis' client-side caching off). It is closed when the test
// ends.
func newClient(t testing.TB, addrs []string, user, password string, _ bool) *wire.Client {
	t.Helper()
	client := wire.New(wire.Options{Addrs: addrs, Cluster: len(addrs) > 1, User: user, Password: password})
	t.Cleanup(client.Close)
	return client
}

// newOutsider connects a rueidis client (client-side caching off) for a
// party outside the Locks under test: a contender, an observer. It is
// closed when the test ends.
func newOutsider(t testing.TB, addrs []string, user, password string) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, Username: user, Password: password,
		DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis.NewClient(%v, user %q): %v", addrs, user, err)
	}
	t.Cleanup(client.Close)
	return client
}

// newLocks returns Locks on client, closed when the test ends.
func newLocks(t testing.TB, client conn.Client, opts ...Option) *Locks {
	t.Helper()
	locks, err := New(client, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(locks.Close)
	return locks
}

// lockCommands returns the lock commands in log, in order, each as its
// args joined by spaces with scripts shortened to their role.
func lockCommands(log []sim.Entry) []string {
	var out []string
	for _, e := range log {
		name := strings.ToUpper(e.Args[0])
		if !slices.Contains(lockCommandNames, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// lockArgs returns the args of the lock commands in log.
func lockArgs(log []sim.Entry) [][]string {
	var out [][]string
	for _, e := range log {
		if slices.Contains(lockCommandNames, strings.ToUpper(e.Args[0])) {
			out = append(out, e.Args)
		}
	}
	return out
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func tok(s string) Token { return TokenFromBytes([]byte(s)) }

// realRedis70 returns the address and password of the real redis-server 7.0
// given by the environment, or skips.
func realRedis70(t *testing.T) (addr, password string) {
	t.Helper()
	addr = os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		t.Skip("RESPIRE_REAL_REDIS70 not set: no real redis-server 7.0 to test against (the Makefile starts one)")
	}
	return addr, os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
}

// fmtSscanInt parses a RESP integer reply such as ":29999\r\n".
func fmtSscanInt(reply string, out *int64) (int, error) {
	return fmt.Sscanf(reply, ":%d\r\n", out)
}

// wireServer is what the wire tests need from a server: the sim node and a
// real redis-server (realServer) both provide it.
type wireServer interface {
	Addr() string
	Exec(args ...string) string
	Log() []sim.Entry
	ResetLog()
	SetUser(name, password string, commands ...string)
}

// target is one server under test.
type target struct {
	profile  sim.Profile
	srv      wireServer
	password string
	clock    *sim.ManualClock // nil on a real server (real time)
	real     bool
}

// locks returns Locks on a new client of the default user.
func (tg *target) locks(t *testing.T, opts ...Option) *Locks {
	return newLocks(t, newClient(t, []string{tg.srv.Addr()}, "", tg.password, false), opts...)
}

// forEachServer runs fn once per sim profile on a fresh node (with a manual
// clock) and once against the real redis-server 7.0 from the environment.
func forEachServer(t *testing.T, fn func(t *testing.T, tg *target)) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			clock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
			srv := startSim(t, sim.Config{Profile: profile, Clock: clock, History: true})
			fn(t, &target{profile: profile, srv: srv, password: simPassword, clock: clock})
		})
	}
	t.Run("real-redis-7.0", func(t *testing.T) {
		addr, password := realRedis70(t)
		lockRealServer(t, addr)
		srv := startRealServer(t, addr, password)
		fn(t, &target{profile: sim.Redis70, srv: srv, password: password, real: true})
	})
}
