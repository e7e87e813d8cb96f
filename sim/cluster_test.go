package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/rueidis"
)

// TestClusterRedirectsAndOrdering checks the cluster replies recorded from
// the real servers, for every profile: MOVED on the wrong node, unknown commands before MOVED,
// syntax errors after it, CROSSSLOT and non-local script keys.
func TestClusterRedirectsAndOrdering(t *testing.T) {
	for _, p := range Profiles {
		t.Run(string(p), func(t *testing.T) {
			cl := startCluster(t, ClusterConfig{Profiles: []Profile{p, p, p}})
			if Slot("foo") != 12182 || cl.NodeFor("foo") != 2 {
				t.Fatalf("Slot(foo) = %d on node %d; want 12182 on node 2", Slot("foo"), cl.NodeFor("foo"))
			}
			moved := "-MOVED 12182 " + cl.Addrs()[2] + "\r\n"
			delex, delifeq := moved, moved
			if !profileSpecs[p].delex {
				delex = unk("DELEX", "foo", "IFEQ", "v")
			}
			if !profileSpecs[p].delifeq {
				delifeq = unk("DELIFEQ", "foo", "v")
			}
			w := dial(t, cl.Addrs()[0])
			for _, c := range []struct {
				args []string
				want string
			}{
				{cmd("GET", "foo"), moved},
				{cmd("SET", "foo", "v", "NX", "PX", "30000"), moved},
				{cmd("SET", "foo", "v", "NX", "XX"), moved},
				{cmd("DELEX", "foo", "IFEQ", "v"), delex},
				{cmd("DELIFEQ", "foo", "v"), delifeq},
				{cmd("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "1", "foo", "v"), moved},
				{cmd("EVAL", cadScript, "1", "foo", "v"), moved},
				{cmd("EVAL", "return 1", "2", "foo", "bar"), "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
				{cmd("MGET", "foo", "bar"), "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
				{cmd("EVAL", "return redis.call('get', 'foo')", "0"), "-ERR Script attempted to access a non local key in a cluster node script: 282297a0228f48cd3fc6a55de6316f31422f5d17, on @user_script:1.\r\n"},
				{cmd("READONLY"), ok},
				{cmd("GET", "foo"), moved},
			} {
				if got := w.do(c.args...); got != c.want {
					t.Errorf("%q on wrong node = %q; want %q", c.args, got, c.want)
				}
			}
			owner := dial(t, cl.Addrs()[2])
			if got := owner.do("EVAL", "return redis.call('get', 'foo')", "0"); got != "$-1\r\n" {
				t.Errorf("local script key on owner = %q; want $-1", got)
			}
		})
	}
}

// TestClusterAskDuringMigration replays a recorded slot migration: the source
// answers ASK for absent keys and TRYAGAIN for partly present ones; the
// target accepts one command after ASKING.
func TestClusterAskDuringMigration(t *testing.T) {
	cl := startCluster(t, ClusterConfig{Profiles: []Profile{Valkey90, Redis84, Redis70}})
	cl.Node(2).Exec("SET", "{foo}a", "1")
	cl.StartMigration(12182, 2, 0)
	ask := "-ASK 12182 " + cl.Addrs()[0] + "\r\n"
	moved := "-MOVED 12182 " + cl.Addrs()[2] + "\r\n"
	src, dst := dial(t, cl.Addrs()[2]), dial(t, cl.Addrs()[0])
	steps := []struct {
		w    *wire
		args []string
		want string
	}{
		{src, cmd("GET", "foo"), ask},
		{src, cmd("SET", "foo", "v", "NX", "PX", "30000"), ask},
		{src, cmd("EVAL", cadScript, "1", "foo", "v"), ask},
		{src, cmd("GET", "{foo}a"), "$1\r\n1\r\n"},
		{src, cmd("MGET", "{foo}a", "{foo}b"), "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"},
		{src, cmd("EVAL", "return 1", "2", "{foo}a", "{foo}b"), "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"},
		{dst, cmd("GET", "foo"), moved},
		{dst, cmd("ASKING"), ok},
		{dst, cmd("GET", "foo"), "$-1\r\n"},
		{dst, cmd("GET", "foo"), moved},
	}
	for _, s := range steps {
		if got := s.w.do(s.args...); got != s.want {
			t.Errorf("%q = %q; want %q", s.args, got, s.want)
		}
	}
	c := newRueidis(t, rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true})
	ctx := context.Background()
	if err := c.Do(ctx, c.B().Set().Key("foo").Value("mine").Build()).Error(); err != nil {
		t.Fatalf("rueidis SET during migration: %v", err)
	}
	if got := cl.Node(0).Exec("GET", "foo"); got != "$4\r\nmine\r\n" {
		t.Fatalf("SET after ASK landed elsewhere: target has %q", got)
	}
	cl.FinishMigration(12182)
	if cl.NodeFor("{foo}a") != 0 || cl.Node(0).Exec("GET", "{foo}a") != "$1\r\n1\r\n" {
		t.Fatalf("FinishMigration did not move {foo}a to node 0")
	}
	if got, err := c.Do(ctx, c.B().Get().Key("{foo}a").Build()).ToString(); err != nil || got != "1" {
		t.Fatalf("rueidis GET after migration = %q, %v", got, err)
	}
}

// TestClusterMoveSlotFollowedByRueidis: after MoveSlot the old owner
// answers MOVED and rueidis follows it to the new owner.
func TestClusterMoveSlotFollowedByRueidis(t *testing.T) {
	cl := startCluster(t, ClusterConfig{Profiles: []Profile{Redis70, Valkey81, Redis84}, Password: "pw"})
	c := newRueidis(t, rueidis.ClientOption{InitAddress: cl.Addrs(), Password: "pw", DisableCache: true})
	setGet(t, c, "lock:a", "v")
	from := cl.NodeFor("lock:a")
	to := (from + 1) % 3
	cl.MoveSlot(Slot("lock:a"), to)
	w := dial(t, cl.Addrs()[from])
	w.do("AUTH", "pw")
	want := "-MOVED " + itoa(int64(Slot("lock:a"))) + " " + cl.Addrs()[to] + "\r\n"
	if got := w.do("GET", "lock:a"); got != want {
		t.Fatalf("GET on old owner = %q; want %q", got, want)
	}
	cl.Node(to).ResetLog()
	got, err := c.Do(context.Background(), c.B().Get().Key("lock:a").Build()).ToString()
	if err != nil || got != "v" {
		t.Fatalf("rueidis GET after MoveSlot = %q, %v; want v", got, err)
	}
	if _, err := cl.Node(to).WaitFor(context.Background(), func(e Entry) bool {
		return strings.EqualFold(e.Args[0], "GET") && e.Args[1] == "lock:a"
	}); err != nil {
		t.Fatal(err)
	}
}

// TestClusterFailoverKeepsKeysDropsClients: a failed-over node keeps its
// keys, takes the new profile, and rueidis reconnects.
func TestClusterFailoverKeepsKeysDropsClients(t *testing.T) {
	cl := startCluster(t, ClusterConfig{Profiles: []Profile{Redis70, Redis70}})
	c := newRueidis(t, rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true})
	setGet(t, c, "lock:f", "v")
	n := cl.NodeFor("lock:f")
	raw := dial(t, cl.Addrs()[n])
	raw.do("PING")
	if err := cl.Failover(n, Valkey90); err != nil {
		t.Fatal(err)
	}
	if !raw.eof() {
		t.Fatalf("connection survived failover")
	}
	if cl.Node(n).Profile() != Valkey90 {
		t.Fatalf("profile after failover = %s", cl.Node(n).Profile())
	}
	var got string
	var err error
	for range 3 { // the first attempt may hit the dropped connection
		if got, err = c.Do(context.Background(), c.B().Get().Key("lock:f").Build()).ToString(); err == nil {
			break
		}
	}
	if err != nil || got != "v" {
		t.Fatalf("GET after failover = %q, %v; want v", got, err)
	}
}

// A hidden node is left out of the topology replies but still serves its
// slots, and redirects still name it.
func TestClusterHiddenNodeIsLeftOutOfTheTopologyOnly(t *testing.T) {
	cl := startCluster(t, ClusterConfig{Profiles: []Profile{Redis84, Redis84}})
	w := dial(t, cl.Addrs()[0])
	full := w.do("CLUSTER", "SLOTS")
	cl.SetHidden(1, true)
	hidden := w.do("CLUSTER", "SLOTS")
	_, port1, _ := strings.Cut(cl.Addrs()[1], ":")
	if !strings.Contains(full, ":"+port1+"\r\n") || strings.Contains(hidden, ":"+port1+"\r\n") {
		t.Fatalf("CLUSTER SLOTS names node 1: before %v, hidden %v; want yes, no", strings.Contains(full, ":"+port1+"\r\n"), strings.Contains(hidden, ":"+port1+"\r\n"))
	}
	if shards := w.do("CLUSTER", "SHARDS"); strings.Contains(shards, ":"+port1+"\r\n") {
		t.Fatal("CLUSTER SHARDS names the hidden node")
	}
	key := "foo" // slot 12182: node 1 of 2
	if got := w.do("GET", key); got != "-MOVED 12182 "+cl.Addrs()[1]+"\r\n" {
		t.Fatalf("GET on node 0 = %q; want MOVED to the hidden node", got)
	}
	if got := dial(t, cl.Addrs()[1]).do("SET", key, "v"); got != ok {
		t.Fatalf("SET on the hidden node = %q", got)
	}
	cl.SetHidden(1, false)
	if got := w.do("CLUSTER", "SLOTS"); got != full {
		t.Fatalf("CLUSTER SLOTS after SetHidden(false) = %q; want %q", got, full)
	}
}
