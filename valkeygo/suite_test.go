package valkeygo_test

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/internal/leasesuite"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/valkeygo"
)

// valkeySuite is the lease behaviour suite's transport over this adapter:
// New on a valkey-go client (client-side caching unless Client.Plain).
var valkeySuite = leasesuite.Transport{Name: "valkeygo", Locks: suiteLocks, Sentinel: suiteSentinel, SentinelAs: suiteSentinelAs,
	ServerError: suiteServerError, FenceOnOwnConn: true, Queued: suiteQueued}

// suiteQueued is leasesuite.Transport.Queued here: the commands waiting in
// the engine's session drainers (the adapter's Conn is a
// conn.PerCallerWriter).
func suiteQueued(locks *lease.Locks) [][]string {
	return leaseinternal.Driver(locks).Transport().(*conn.Engine).Queued()
}

func suiteServerError(err error) (string, bool) {
	var valkeyErr *valkey.ValkeyError
	if !errors.As(err, &valkeyErr) {
		return "", false
	}
	return valkeyErr.Error(), true
}

func suiteLocks(t testing.TB, c leasesuite.Client, opts ...lease.Option) (*lease.Locks, func()) {
	t.Helper()
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: c.Addrs, Username: c.User, Password: c.Password,
		DisableCache: c.Plain})
	if err != nil {
		t.Fatalf("valkey.NewClient(%v, user %q): %v", c.Addrs, c.User, err)
	}
	var once sync.Once
	closeClient := func() { once.Do(client.Close) }
	t.Cleanup(closeClient)
	locks, err := valkeygo.New(client, opts...)
	if err != nil {
		t.Fatalf("valkeygo.New: %v", err)
	}
	t.Cleanup(locks.Close)
	return locks, closeClient
}

func suiteSentinel(t testing.TB, sentinels []string, master, password string, opts ...lease.Option) *lease.Locks {
	t.Helper()
	locks, err := suiteSentinelAs(t, sentinels, master, "", password, password, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return locks
}

func suiteSentinelAs(t testing.TB, sentinels []string, master, user, password, sentinelPassword string,
	opts ...lease.Option) (*lease.Locks, error) {
	t.Helper()
	if master == "" {
		master = os.Getenv("RESPIRE_REAL_SENTINEL70_MASTER")
	}
	option := valkey.ClientOption{
		InitAddress: sentinels, Username: user, Password: password, DisableCache: true,
		Sentinel: valkey.SentinelOption{MasterSet: master, Password: sentinelPassword,
			TopologyRefreshInterval: time.Second}, // a missed +switch-master must not pin the client
	}
	client, err := valkey.NewClient(option)
	if err != nil {
		return nil, fmt.Errorf("Sentinel client: %w", err)
	}
	t.Cleanup(client.Close)
	locks, err := valkeygo.NewSentinel(client, option, opts...) // every sentinel's +switch-master
	if err != nil {
		return nil, fmt.Errorf("valkeygo.NewSentinel: %w", err)
	}
	t.Cleanup(locks.Close)
	return locks, nil
}

// TestValkeyGoLeaseSuite_EveryCase runs every case of lease's behaviour
// suite (internal/leasesuite) on valkey-go through this adapter: none is
// skipped.
func TestValkeyGoLeaseSuite_EveryCase(t *testing.T) {
	for _, c := range leasesuite.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			c.Run(t, valkeySuite)
		})
	}
}
