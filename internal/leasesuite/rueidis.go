package leasesuite

// This file connects rueidis clients for the parties outside the Locks
// under test (outsiders, contenders, observers): the same on every
// transport. The transports under test are Wire (this module) and each
// adapter module's.

import (
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

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
