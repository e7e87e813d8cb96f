package goredis

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/internal/leasesuite"
	"github.com/respire-go/respire/lease"
)

// goredisSuite is the lease behaviour suite's transport over go-redis:
// New on a go-redis client at its defaults (a *redis.Client for one
// address, a *redis.ClusterClient for several, a FailoverClient for
// Sentinel).
var goredisSuite = leasesuite.Transport{Name: "goredis", Locks: suiteLocks, Sentinel: suiteSentinel, SentinelAs: suiteSentinelAs, ServerError: suiteServerError,
	FenceOnOwnConn: true, Queued: suiteQueued}

// suiteQueued is leasesuite.Transport.Queued on go-redis: the commands
// waiting in the engine's drainers (a go-redis Conn carries one round trip
// at a time).
func suiteQueued(locks *lease.Locks) [][]string {
	return leaseinternal.Driver(locks).Transport().(*conn.Engine).Queued()
}

func suiteServerError(err error) (string, bool) {
	var redisErr redis.Error
	if !errors.As(err, &redisErr) {
		return "", false
	}
	return redisErr.Error(), true
}

func suiteLocks(t testing.TB, c leasesuite.Client, opts ...lease.Option) (*lease.Locks, func()) {
	t.Helper()
	var client redis.UniversalClient
	if len(c.Addrs) == 1 {
		client = redis.NewClient(&redis.Options{Addr: c.Addrs[0], Username: c.User, Password: c.Password, MaintNotificationsConfig: maintOff()})
	} else {
		client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs, Username: c.User, Password: c.Password, MaintNotificationsConfig: maintOff()})
	}
	var once sync.Once
	closeClient := func() { once.Do(func() { _ = client.Close() }) }
	t.Cleanup(closeClient)
	locks, err := New(client, opts...)
	if err != nil {
		t.Fatalf("goredis.New: %v", err)
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
	client := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: master, SentinelAddrs: sentinels,
		Username: user, Password: password, SentinelPassword: sentinelPassword})
	t.Cleanup(func() { _ = client.Close() })
	locks, err := New(client, opts...)
	if err != nil {
		return nil, fmt.Errorf("goredis.New: %w", err)
	}
	t.Cleanup(locks.Close)
	return locks, nil
}

// TestGoRedisLeaseSuite_EveryCase runs every case of lease's behaviour
// suite (internal/leasesuite), the list package lease runs on rueidis, on
// go-redis: none is skipped.
func TestGoRedisLeaseSuite_EveryCase(t *testing.T) {
	for _, c := range leasesuite.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			c.Run(t, goredisSuite)
		})
	}
}
