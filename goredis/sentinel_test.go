package goredis

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/realserver"
)

// realSentinel returns a FailoverClient on the real Sentinel set (locked
// for the test), or skips.
func realSentinel(t *testing.T) *redis.Client {
	t.Helper()
	addrs := os.Getenv("RESPIRE_REAL_SENTINEL70")
	if addrs == "" {
		t.Skip("RESPIRE_REAL_SENTINEL70 not set: run under scripts/with-servers.sh")
	}
	realserver.Lock(t, addrs)
	pw := os.Getenv("RESPIRE_REAL_SENTINEL70_PASSWORD")
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: os.Getenv("RESPIRE_REAL_SENTINEL70_MASTER"),
		SentinelAddrs: strings.Split(addrs, ","), SentinelPassword: pw, Password: pw})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestGoRedisSentinelSwitch_SessionsFollowTheMaster: behind a
// FailoverClient the adapter names the master by CLIENT INFO's laddr=;
// after SENTINEL FAILOVER a Dial of the old master fails with
// ErrUnknownNode (it would reach the new one), Nodes names the new one,
// the old master's session is demoted and retired, its fence needs no
// kill, IsPrimary says so, and the lock taken before the switch is read
// on the new master through a fresh session.
func TestGoRedisSentinelSwitch_SessionsFollowTheMaster(t *testing.T) {
	client := realSentinel(t)
	adapter := newAdapter(t, client)
	tr := conn.NewEngine(conn.EngineConfig{Client: adapter})
	t.Cleanup(tr.Close)
	k, tok := key(t, "k"), token(t)
	first := mustDo(t, tr, conn.AcquireOp(k, tok, 60000))
	old := first.Session
	if !first.Owned || !tr.IsPrimary(old.Node()) {
		t.Fatalf("before the switch: %+v", first)
	}
	for acked := int64(0); acked < 1; { // the replica may still be syncing after an earlier switch
		n, err := client.Do(ctxFor(t, 5*time.Second), "WAIT", "1", "1000").Int64()
		if err != nil {
			t.Fatal(err)
		}
		acked = n
	}
	sentinel := redis.NewSentinelClient(&redis.Options{Addr: strings.Split(os.Getenv("RESPIRE_REAL_SENTINEL70"), ",")[0],
		Password: os.Getenv("RESPIRE_REAL_SENTINEL70_PASSWORD")})
	defer sentinel.Close()
	if err := sentinel.Failover(ctxFor(t, 5*time.Second), os.Getenv("RESPIRE_REAL_SENTINEL70_MASTER")).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var res conn.Result
	for time.Now().Before(deadline) {
		var err error
		res, err = tr.Do(ctxFor(t, 2*time.Second), conn.OwnerOp(k), nil)
		if err == nil && res.Session.Node() != old.Node() {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if res.Session == nil || res.Session.Node() == old.Node() {
		t.Fatal("no session on a new master within 30s")
	}
	if !res.Owned || res.Token != tok {
		t.Fatalf("lock on the new master: %+v", res)
	}
	if !old.Retired() || tr.IsPrimary(old.Node()) {
		t.Fatalf("old session retired %v; IsPrimary(old) %v", old.Retired(), tr.IsPrimary(old.Node()))
	}
	if err := tr.Fence(ctxFor(t, 5*time.Second), old); err != nil || !old.Demoted() {
		t.Fatalf("fence of the old master's session: %v, demoted %v; want no kill needed, demoted", err, old.Demoted())
	}
	nodes, err := adapter.Nodes(ctxFor(t, 5*time.Second))
	if err != nil || len(nodes) != 1 || nodes[0] != res.Session.Node() {
		t.Fatalf("Nodes after the switch: %v %v, want [%s]", nodes, err, res.Session.Node())
	}
	if cn, err := adapter.Dial(ctxFor(t, 5*time.Second), old.Node()); !errors.Is(err, conn.ErrUnknownNode) {
		if cn != nil {
			cn.Close()
		}
		t.Fatalf("Dial of the old master: %v, want ErrUnknownNode", err)
	}
}
