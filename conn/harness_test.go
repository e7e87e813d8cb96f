package conn_test

import (
	"context"
	. "github.com/respire-go/respire/conn"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/simtest"

	"github.com/respire-go/respire/internal/leakcheck"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/internal/wire"

	"github.com/respire-go/respire/sim"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m, leakcheck.RueidisBackground()...)
}

const simPassword = "pw"

var lockCommandNames = []string{"SET", "GET", "DELEX", "DELIFEQ", "EVALSHA", "EVAL", "ASKING"}

func startSim(t *testing.T, profile sim.Profile) *sim.Server {
	t.Helper()
	return simtest.Start(t, sim.Config{Profile: profile, Password: simPassword})
}

func startCluster(t *testing.T, profiles ...sim.Profile) *sim.Cluster {
	t.Helper()
	return simtest.StartCluster(t, sim.ClusterConfig{Profiles: profiles, Password: simPassword})
}

// newClient returns a client of the root module's own (internal/wire) for
// addrs (several: a cluster's nodes), closed when the test ends.
func newClient(t *testing.T, addrs []string, user, password string) *wire.Client {
	t.Helper()
	client := wire.New(wire.Options{Addrs: addrs, Cluster: len(addrs) > 1, User: user, Password: password})
	t.Cleanup(client.Close)
	return client
}

// newOutsider connects a rueidis client for a party outside the engine
// under test, closed when the test ends.
func newOutsider(t *testing.T, addrs []string, user, password string) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, Username: user, Password: password,
		DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis.NewClient: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

// newPool returns the engine over client, closed when the test ends.
func newPool(t *testing.T, client Client) *Pool {
	p := NewEngine(EngineConfig{Client: client})
	t.Cleanup(p.Close)
	return p
}

// lockCommands lists the lock command names of log, optionally only those of
// one client.
func lockCommands(log []sim.Entry, clientID int64) []string {
	var out []string
	for _, e := range log {
		name := strings.ToUpper(e.Args[0])
		if slices.Contains(lockCommandNames, name) && (clientID == 0 || e.ClientID == clientID) {
			out = append(out, name)
		}
	}
	return out
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustSet stores key=value with a TTL through the admin interface.
func mustSet(t *testing.T, srv *sim.Server, key, value string) {
	t.Helper()
	if got := srv.Exec("SET", key, value, "PX", "60000"); got != "+OK\r\n" {
		t.Fatalf("admin SET %s = %q", key, got)
	}
}

// pingBeforeEveryCommand lowers the idle threshold to zero for the rest of
// the test, so the next command on a session the server closed finds it dead
// with its PING (the rule of checkIdle) without waiting out DefaultIdleCheck.
func pingBeforeEveryCommand(t *testing.T, p *Pool) {
	t.Helper()
	p.SetIdleCheck(0)
}

func mustRelease(t *testing.T, p *Pool, key, token string) Result {
	t.Helper()
	res, err := p.Release(ctxT(t), key, token)
	if err != nil || !res.Owned {
		t.Fatalf("Release(%s) = %+v, %v; want owned", key, res, err)
	}
	return res
}
