package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/rueidis"
)

func newRueidis(t *testing.T, opt rueidis.ClientOption) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("rueidis.NewClient(%v): %v", opt.InitAddress, err)
	}
	t.Cleanup(c.Close)
	return c
}

func setGet(t *testing.T, c rueidis.Client, key, val string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Do(ctx, c.B().Set().Key(key).Value(val).Nx().PxMilliseconds(30000).Build()).Error(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
	got, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
	if err != nil || got != val {
		t.Fatalf("GET %s = %q, %v; want %q", key, got, err, val)
	}
}

// TestRueidisConnectsToEveryProfile: rueidis completes its handshake
// (HELLO 3 or AlwaysRESP2, CLIENT TRACKING, CLIENT SETINFO) on every
// profile and runs commands and scripts.
func TestRueidisConnectsToEveryProfile(t *testing.T) {
	for _, p := range Profiles {
		for _, resp2 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/AlwaysRESP2=%v", p, resp2), func(t *testing.T) {
				s := startSim(t, Config{Profile: p, Password: "pw"})
				c := newRueidis(t, rueidis.ClientOption{InitAddress: []string{s.Addr()}, Password: "pw", AlwaysRESP2: resp2, DisableCache: resp2})
				setGet(t, c, "lock", "owner-1")
				n, err := c.Do(context.Background(), c.B().Eval().Script(cadScript).Numkeys(1).Key("lock").Arg("owner-1").Build()).AsInt64()
				if err != nil || n != 1 {
					t.Fatalf("EVAL cad = %d, %v; want 1", n, err)
				}
			})
		}
	}
}

// TestRueidisScriptNOPERMTextPerProfile: a Lua redis.call denied by the
// ACL reaches rueidis with the profile's exact error text.
func TestRueidisScriptNOPERMTextPerProfile(t *testing.T) {
	for _, p := range Profiles {
		t.Run(string(p), func(t *testing.T) {
			s := startSim(t, Config{Profile: p, Password: "pw"})
			s.SetUser("lockernodel", "pw", "set", "get", "eval", "evalsha", "client|setinfo")
			c := newRueidis(t, rueidis.ClientOption{InitAddress: []string{s.Addr()}, Username: "lockernodel",
				Password: "pw", DisableCache: true})
			setGet(t, c, "kacl", "v")
			err := c.Do(context.Background(), c.B().Eval().Script(cadScript).Numkeys(1).Key("kacl").Arg("v").Build()).Error()
			want := "ACL failure in script: User lockernodel has no permissions to run the 'del' command script: " + cadSHA
			if p == Redis70 {
				want = "The user executing the script can't run this command or subcommand script: " + cadSHA
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("EVAL cad as lockernodel: %v; want error containing %q", err, want)
			}
			if got := s.Exec("GET", "kacl"); got != "$1\r\nv\r\n" {
				t.Fatalf("key after denied script = %q", got)
			}
		})
	}
}

// TestRueidisClusterMixedProfiles: a rueidis cluster client discovers a
// mixed cluster (CLUSTER SLOTS or SHARDS depending on the node version)
// and reaches keys on every node.
func TestRueidisClusterMixedProfiles(t *testing.T) {
	for _, profiles := range [][]Profile{{Redis70, Redis84, Valkey90}, {Redis70, Redis70}, {Valkey81, Valkey90, Redis84}} {
		t.Run(fmt.Sprint(profiles), func(t *testing.T) {
			cl := startCluster(t, ClusterConfig{Profiles: profiles, Password: "pw"})
			c := newRueidis(t, rueidis.ClientOption{InitAddress: cl.Addrs(), Password: "pw", DisableCache: true})
			hit := map[int]bool{}
			for i := 0; len(hit) < len(profiles) && i < 100; i++ {
				key := fmt.Sprintf("lock:%d", i)
				setGet(t, c, key, "v")
				node := cl.NodeFor(key)
				if got := cl.Node(node).Exec("GET", key); got != "$1\r\nv\r\n" {
					t.Fatalf("key %s not on its owner node %d: %q", key, node, got)
				}
				hit[node] = true
			}
			if len(hit) != len(profiles) {
				t.Fatalf("keys reached nodes %v; want all %d", hit, len(profiles))
			}
		})
	}
}

func startCluster(t *testing.T, cfg ClusterConfig) *Cluster {
	t.Helper()
	cl, err := StartCluster(context.Background(), cfg)
	if err != nil {
		t.Fatalf("StartCluster: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}
