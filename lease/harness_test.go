package lease

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/simtest"

	"github.com/respire-go/respire/internal/leakcheck"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/respire-go/respire/sim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leakcheck.RueidisBackground()...)
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

// newClient connects a rueidis client; it is closed when the test ends.
func newClient(t *testing.T, addrs []string, user, password string, disableCache bool) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  addrs,
		Username:     user,
		Password:     password,
		DisableCache: disableCache,
	})
	if err != nil {
		t.Fatalf("rueidis.NewClient(%v, user %q): %v", addrs, user, err)
	}
	t.Cleanup(client.Close)
	return client
}

// newLocks returns Locks on client, closed when the test ends.
func newLocks(t *testing.T, client rueidis.Client, opts ...Option) *Locks {
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

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func tok(s string) Token { return TokenFromBytes([]byte(s)) }

// fmtSscanInt parses a RESP integer reply such as ":29999\r\n".
func fmtSscanInt(reply string, out *int64) (int, error) {
	return fmt.Sscanf(reply, ":%d\r\n", out)
}
