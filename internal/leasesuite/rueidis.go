package leasesuite

import (
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/lease"
)

// Rueidis is the suite's transport over rueidis: lease.New on a rueidis
// client (with rueidis' client-side caching unless Client.Plain).
var Rueidis = Transport{Name: "rueidis", Locks: rueidisLocks, Sentinel: rueidisSentinel, ServerError: rueidisServerError}

func rueidisServerError(err error) (string, bool) {
	var redisErr *rueidis.RedisError
	if !errors.As(err, &redisErr) {
		return "", false
	}
	return redisErr.Error(), true
}

func rueidisLocks(t testing.TB, c Client, opts ...lease.Option) (*lease.Locks, func()) {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs, Username: c.User, Password: c.Password,
		DisableCache: c.Plain})
	if err != nil {
		t.Fatalf("rueidis.NewClient(%v, user %q): %v", c.Addrs, c.User, err)
	}
	var once sync.Once
	closeClient := func() { once.Do(client.Close) }
	t.Cleanup(closeClient)
	locks, err := lease.New(client, opts...)
	if err != nil {
		t.Fatalf("lease.New: %v", err)
	}
	t.Cleanup(locks.Close)
	return locks, closeClient
}

func rueidisSentinel(t testing.TB, sentinels []string, master, password string, opts ...lease.Option) *lease.Locks {
	t.Helper()
	client := newSentinelClient(t, sentinels, master, password)
	locks, err := lease.New(client, opts...)
	if err != nil {
		t.Fatalf("lease.New: %v", err)
	}
	t.Cleanup(locks.Close)
	return locks
}

// newClient connects a rueidis client (client-side caching off): the
// transport's, or an outsider's. It is closed when the test ends.
func newClient(t testing.TB, addrs []string, user, password string) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, Username: user, Password: password,
		DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis.NewClient(%v, user %q): %v", addrs, user, err)
	}
	t.Cleanup(client.Close)
	return client
}

// newSentinelClient connects a rueidis client to master through sentinels.
func newSentinelClient(t testing.TB, sentinels []string, master, password string) rueidis.Client {
	t.Helper()
	if master == "" {
		master = os.Getenv("RESPIRE_REAL_SENTINEL70_MASTER")
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: sentinels, Password: password, DisableCache: true,
		Sentinel: rueidis.SentinelOption{MasterSet: master, Password: password,
			TopologyRefreshInterval: time.Second}, // a missed +switch-master must not pin the client
	})
	if err != nil {
		t.Fatalf("Sentinel client: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}
