package leasesuite

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/internal/wire"
	"github.com/respire-go/respire/lease"
)

// Wire is the suite's transport over the root module's own minimal client
// (internal/wire): the engine on plain sockets, with no Redis client
// library. The root module runs the suite on it; each adapter module runs
// it on its client.
var Wire = Transport{Name: "wire", Locks: wireLocks, Sentinel: wireSentinel, SentinelAs: wireSentinelAs, ServerError: wireServerError,
	FenceOnOwnConn: true}

// wireServerError returns the server's error reply err carries (the
// engine's *conn.ServerError: the wire client has no error type of its own).
func wireServerError(err error) (string, bool) {
	var se *conn.ServerError
	if !errors.As(err, &se) {
		return "", false
	}
	return se.Message, true
}

func wireLocks(t testing.TB, c Client, opts ...lease.Option) (*lease.Locks, func()) {
	t.Helper()
	client := wire.New(wire.Options{Addrs: c.Addrs, Cluster: len(c.Addrs) > 1, User: c.User, Password: c.Password})
	var once sync.Once
	closeClient := func() { once.Do(client.Close) }
	t.Cleanup(closeClient)
	return wireLocksOn(t, client, opts...), closeClient
}

func wireSentinel(t testing.TB, sentinels []string, master, password string, opts ...lease.Option) *lease.Locks {
	t.Helper()
	locks, _ := wireSentinelAs(t, sentinels, master, "", password, password, opts...)
	return locks
}

func wireSentinelAs(t testing.TB, sentinels []string, master, user, password, sentinelPassword string,
	opts ...lease.Option) (*lease.Locks, error) {
	t.Helper()
	if master == "" {
		master = os.Getenv("RESPIRE_REAL_SENTINEL70_MASTER")
	}
	client := wire.New(wire.Options{Addrs: sentinels, MasterName: master, User: user, Password: password,
		SentinelPassword: sentinelPassword})
	t.Cleanup(client.CloseSentinel)
	return wireLocksOn(t, client, opts...), nil
}

// wireLocksOn returns Locks on client, closed when the test ends.
func wireLocksOn(t testing.TB, client *wire.Client, opts ...lease.Option) *lease.Locks {
	t.Helper()
	locks, err := leaseinternal.NewTransport(conn.NewEngine(conn.EngineConfig{Client: client}), opts...)
	if err != nil {
		t.Fatalf("leaseinternal.NewTransport: %v", err)
	}
	t.Cleanup(locks.Close)
	return locks
}
