package goredis

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/internal/leasesuite"
	"github.com/respire-go/respire/lease"
)

// goredisSuite is the lease behaviour suite's transport over go-redis:
// New on a go-redis client at its defaults (a *redis.Client for one
// address, a *redis.ClusterClient for several, a FailoverClient for
// Sentinel).
var goredisSuite = leasesuite.Transport{Name: "goredis", Locks: suiteLocks, Sentinel: suiteSentinel, ServerError: suiteServerError,
	FenceOnOwnConn: true, Queued: suiteQueued}

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
	client := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: master, SentinelAddrs: sentinels,
		Password: password, SentinelPassword: password})
	t.Cleanup(func() { _ = client.Close() })
	locks, err := New(client, opts...)
	if err != nil {
		t.Fatalf("goredis.New: %v", err)
	}
	t.Cleanup(locks.Close)
	return locks
}

// TestGoRedisLeaseSuite_EveryCase runs every case of lease's behaviour
// suite (internal/leasesuite), the list package lease runs on rueidis, on
// go-redis.
func TestGoRedisLeaseSuite_EveryCase(t *testing.T) {
	for _, c := range leasesuite.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if why, open := openOnGoRedis[c.Name]; open && os.Getenv("RESPIRE_GOREDIS_OPEN") == "" {
				t.Skipf("open on go-redis (issue 21): %s", why)
			}
			c.Run(t, goredisSuite)
		})
	}
}

// openOnGoRedis names the suite's cases that fail on go-redis today, each
// with what was seen: known gaps of issue 21, skipped here so that every
// other case keeps guarding go-redis; the closing note of issue 21 lists
// them, and each is to be fixed (or its assumption about rueidis' one
// connection per node moved into the case) rather than left here.
// RESPIRE_GOREDIS_OPEN=1 runs them anyway.
var openOnGoRedis = map[string]string{
	"PushDetectsLoss_CloseDropsTheQueuedHolderReads": "Locks.Close waits about 5 s for the watcher's " +
		"hanging holder reads instead of dropping them",
	"PushWakesWaiters_LeastPrivilegeUserWithTracking": "under -race the waiter is never woken by the " +
		"release and meets its 10 s deadline (it passes without -race): the listener's invalidation and the " +
		"reader's reply ride two connections, an ordering the hub may not handle",
}
