package leasesuite

import (
	"fmt"
	"github.com/respire-go/respire/lease"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
)

// realCluster70 returns the addresses and password of the real 3-master
// redis-server 7.0 cluster given by the environment, or skips.
func realCluster70(t *testing.T) (addrs []string, password string) {
	t.Helper()
	list := os.Getenv("RESPIRE_REAL_CLUSTER70")
	if list == "" {
		t.Skip("RESPIRE_REAL_CLUSTER70 not set: no real redis-server 7.0 cluster (the Makefile starts one)")
	}
	return strings.Split(list, ","), os.Getenv("RESPIRE_REAL_CLUSTER70_PASSWORD")
}

// On a real cluster every raw-token operation reaches the primary that owns
// the key's slot: keys spread over all three masters are taken, renewed (Lua
// on 7.0), read back and released, and another client sees exactly that.
func caseRawTokenAPIRoutesEveryKeyToItsPrimaryOnARealCluster(t *testing.T, tr Transport) {
	addrs, password := realCluster70(t)
	realserver.Lock(t, strings.Join(addrs, ",")) // failover tests use the cluster too
	locks := newLocks(t, tr, clientOf(addrs, "", password, true)).WithKeyPrefix(fmt.Sprintf("realcluster:%d:", time.Now().UnixNano()))
	observer := newClient(t, addrs, "", password)
	ctx := ctxT(t)
	for i := range 24 { // 24 keys land on every master of 3 with overwhelming likelihood
		key, token := fmt.Sprintf("job-%d", i), lease.NewToken()
		if ok, err := locks.TryTake(ctx, key, token, 30*time.Second); !ok || err != nil {
			t.Fatalf("TryTake(%s) = %v, %v; want true, nil", key, ok, err)
		}
		if ok, err := locks.ResetExpiry(ctx, key, token, time.Minute); !ok || err != nil {
			t.Fatalf("ResetExpiry(%s) = %v, %v; want true, nil", key, ok, err)
		}
		pttl, err := observer.Do(ctx, observer.B().Pttl().Key(locks.KeyPrefix()+key).Build()).AsInt64()
		if err != nil || pttl <= 30_000 {
			t.Fatalf("PTTL(%s) seen by another client = %d, %v; want > 30000 after the renewal", key, pttl, err)
		}
		owner, found, err := locks.OwnerToken(ctx, key)
		if !found || err != nil || owner != token {
			t.Fatalf("OwnerToken(%s) = found %v, %v; want the taker's token", key, found, err)
		}
		if ok, err := locks.Release(ctx, key, lease.NewToken()); ok || err != nil {
			t.Fatalf("Release(%s) with another token = %v, %v; want false, nil", key, ok, err)
		}
		if ok, err := locks.Release(ctx, key, token); !ok || err != nil {
			t.Fatalf("Release(%s) = %v, %v; want true, nil", key, ok, err)
		}
		if n, _ := observer.Do(ctx, observer.B().Exists().Key(locks.KeyPrefix()+key).Build()).AsInt64(); n != 0 {
			t.Fatalf("EXISTS(%s) after release = %d; want 0", key, n)
		}
	}
}

func init() {
	register(
		Case{"RawTokenAPIRoutesEveryKeyToItsPrimaryOnARealCluster", caseRawTokenAPIRoutesEveryKeyToItsPrimaryOnARealCluster},
	)
}
