package goredis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// TestGoRedisFollowsRedirects_MovedAndAsk: on a sim cluster (every
// profile), go-redis' slot map made stale by a slot move yields MOVED on
// the old owner's session, which Do follows to the new owner (the
// session retired); a slot being migrated yields ASK, followed with
// ASKING; a session's own Do returns the redirect, Definite.
func TestGoRedisFollowsRedirects_MovedAndAsk(t *testing.T) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			c, err := sim.StartCluster(context.Background(), sim.ClusterConfig{Profiles: []sim.Profile{profile, profile, profile}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaintNotificationsConfig: maintOff()})
			t.Cleanup(func() { _ = client.Close() })
			tr := newEngine(t, client)
			if !tr.Cluster() {
				t.Fatal("not in cluster mode")
			}
			k := "moved-key"
			ctx := ctxFor(t, 10*time.Second)
			first, err := tr.SessionForKey(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			from := c.NodeFor(k)
			to := (from + 1) % 3
			c.MoveSlot(sim.Slot(k), to)
			if _, err := first.Do(ctx, conn.OwnerOp(k), nil); !errors.Is(err, conn.ErrDidNotRun) {
				t.Fatalf("session Do after a move: %v", err)
			} else if e := (*conn.Error)(nil); !errors.As(err, &e) || e.Redirect == nil || e.Redirect.Ask {
				t.Fatalf("not a MOVED: %v", err)
			}
			if !first.Retired() {
				t.Fatal("redirected session not retired")
			}
			c.MoveSlot(sim.Slot(k), from) // go-redis may have reloaded: move it once more
			res, err := tr.Do(ctx, conn.AcquireOp(k, "tok", 10000), nil)
			if err != nil || !res.Owned || res.Session.Node() != c.Addrs()[from] {
				t.Fatalf("Do after a move: %+v %v", res, err)
			}
			ask := "ask-key"
			target := (c.NodeFor(ask) + 1) % 3
			c.StartMigration(sim.Slot(ask), c.NodeFor(ask), target)
			res, err = tr.Do(ctx, conn.AcquireOp(ask, "tok", 10000), nil)
			if err != nil || !res.Owned || res.Session.Node() != c.Addrs()[target] {
				t.Fatalf("Do during a migration: %+v %v", res, err)
			}
			if err := tr.CheckFencedKeys("a{x}", "b{y}"); !errors.Is(err, conn.ErrCrossSlot) {
				t.Fatalf("cross-slot: %v", err)
			}
		})
	}
}

// TestGoRedisClusterNodes_DialKnownRefuseUnknown: on a sim cluster, Nodes
// names the masters of go-redis' slot map, each of them dials (a Conn of
// go-redis' node client, whose CLIENT INFO laddr= is that node), and an
// address the cluster does not have fails with conn.ErrUnknownNode.
func TestGoRedisClusterNodes_DialKnownRefuseUnknown(t *testing.T) {
	c, err := sim.StartCluster(context.Background(), sim.ClusterConfig{Profiles: []sim.Profile{sim.Redis70, sim.Redis70, sim.Redis70}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaintNotificationsConfig: maintOff()})
	t.Cleanup(func() { _ = client.Close() })
	adapter := newAdapter(t, client)
	if adapter.Mode() != conn.ModeCluster {
		t.Fatalf("mode %v", adapter.Mode())
	}
	nodes, err := adapter.Nodes(ctxFor(t, 5*time.Second))
	if err != nil || len(nodes) != 3 {
		t.Fatalf("Nodes: %v %v, want the 3 masters", nodes, err)
	}
	for _, node := range nodes {
		r, err := do(ctxFor(t, 5*time.Second), dial(t, adapter, node), "CLIENT", "INFO")
		if err != nil || !strings.Contains(r.Text, "laddr="+node) {
			t.Fatalf("a Conn dialled to %s: %+v %v", node, r, err)
		}
	}
	if cn, err := adapter.Dial(ctxFor(t, 5*time.Second), "127.0.0.1:1"); !errors.Is(err, conn.ErrUnknownNode) {
		if cn != nil {
			cn.Close()
		}
		t.Fatalf("Dial of an address not in the cluster: %v, want ErrUnknownNode", err)
	}
}
