package conn_test

import (
	"fmt"
	. "github.com/respire-go/respire/conn"
	"slices"
	"testing"

	"github.com/respire-go/respire/capstore"
	"github.com/respire-go/respire/sim"
)

// keyOnNode returns a key that hashes to node i.
func keyOnNode(t *testing.T, c *sim.Cluster, i int) string {
	t.Helper()
	for n := range 10000 {
		if key := fmt.Sprintf("lock-%d", n); c.NodeFor(key) == i {
			return key
		}
	}
	t.Fatalf("no key for node %d", i)
	return ""
}

func clusterSet(t *testing.T, c *sim.Cluster, node int, key, value string) {
	t.Helper()
	if got := c.Node(node).Exec("SET", key, value, "PX", "60000"); got != "+OK\r\n" {
		t.Fatalf("admin SET on node %d = %q", node, got)
	}
}

func TestMixedVersionClusterUsesNativeCommandsPerNode(t *testing.T) {
	profiles := []sim.Profile{sim.Redis70, sim.Redis84, sim.Valkey81, sim.Valkey90}
	c := startCluster(t, profiles...)
	p := newPool(t, newClient(t, c.Addrs(), "", simPassword))
	want := map[sim.Profile][]string{
		sim.Redis70:  {"DELEX", "DELIFEQ", "EVALSHA", "EVAL", "EVALSHA", "SET", "EVALSHA", "EVAL", "EVALSHA"},
		sim.Redis84:  {"DELEX", "DELEX", "SET", "SET"},
		sim.Valkey81: {"DELEX", "DELIFEQ", "EVALSHA", "EVAL", "EVALSHA", "SET", "SET"},
		sim.Valkey90: {"DELEX", "DELIFEQ", "DELIFEQ", "SET", "SET"},
	}
	for i, profile := range profiles {
		key := keyOnNode(t, c, i)
		c.Node(i).ResetLog()
		for range 2 {
			clusterSet(t, c, i, key, "tok")
			mustRelease(t, p, key, "tok")
		}
		clusterSet(t, c, i, key, "tok")
		for range 2 {
			if res, err := p.Extend(ctxT(t), key, "tok", 60000); err != nil || !res.Owned {
				t.Fatalf("%s: Extend = %+v, %v", profile, res, err)
			}
		}
		if got := lockCommands(c.Node(i).Log(), 0); !slices.Equal(got, want[profile]) {
			t.Errorf("node %d (%s) saw %v; want %v", i, profile, got, want[profile])
		}
	}
}

// A session is retired and re-opened with empty capabilities after a MOVED.
func TestSessionRetiredAndReopenedEmptyAfterMoved(t *testing.T) {
	c := startCluster(t, sim.Valkey90, sim.Valkey90)
	p := newPool(t, newClient(t, c.Addrs(), "", simPassword))
	key := keyOnNode(t, c, 0)
	for range 2 {
		clusterSet(t, c, 0, key, "tok")
		mustRelease(t, p, key, "tok")
	}
	old, err := p.SessionForT(ctxT(t), c.Addrs()[0])
	if err != nil || old.Capabilities() != capstore.DelexUnsupported {
		t.Fatalf("session before move: %v, caps %v", err, old.Capabilities())
	}
	clusterSet(t, c, 0, key, "tok")
	c.MoveSlot(sim.Slot(key), 1)
	c.Node(0).ResetLog()
	c.Node(1).ResetLog()
	res := mustRelease(t, p, key, "tok")
	if got := lockCommands(c.Node(0).Log(), 0); !slices.Equal(got, []string{"DELIFEQ"}) {
		t.Fatalf("old owner saw %v; want [DELIFEQ] answered with MOVED", got)
	}
	if got := lockCommands(c.Node(1).Log(), 0); !slices.Equal(got, []string{"DELEX", "DELIFEQ"}) {
		t.Fatalf("new owner saw %v; want fresh discovery [DELEX DELIFEQ]", got)
	}
	if !old.Retired() || res.Session == old || Pin(res.Session).Node() != c.Addrs()[1] {
		t.Fatalf("MOVED did not retire the old session or route to node 1 (%s)", Pin(res.Session).Node())
	}
	c.Node(1).ResetLog()
	clusterSet(t, c, 1, key, "tok")
	mustRelease(t, p, key, "tok")
	if got := lockCommands(c.Node(1).Log(), 0); !slices.Equal(got, []string{"DELIFEQ"}) {
		t.Fatalf("slot map not updated from MOVED: node 1 saw %v", got)
	}
}

func TestAskRedirectSendsAskingBeforeEveryStep(t *testing.T) {
	c := startCluster(t, sim.Valkey90, sim.Valkey81)
	p := newPool(t, newClient(t, c.Addrs(), "", simPassword))
	key := keyOnNode(t, c, 0)
	slot := sim.Slot(key)
	c.StartMigration(slot, 0, 1)
	defer c.FinishMigration(slot)
	clusterSet(t, c, 1, key, "tok") // the key already moved; node 0 answers ASK
	res, err := p.Release(ctxT(t), key, "tok")
	if err != nil || !res.Owned {
		t.Fatalf("Release during migration = %+v, %v; want owned", res, err)
	}
	want := []string{"ASKING", "DELEX", "ASKING", "DELIFEQ", "ASKING", "EVALSHA", "ASKING", "EVAL"}
	if got := lockCommands(c.Node(1).Log(), 0); !slices.Equal(got, want) {
		t.Fatalf("importing node saw %v; want %v", got, want)
	}
	if Pin(res.Session).Node() != c.Addrs()[1] || Pin(res.Session).Capabilities().Has(capstore.DelexUnsupported) == false {
		t.Fatalf("ASK target session %s caps %v", Pin(res.Session).Node(), Pin(res.Session).Capabilities())
	}
	if got := c.Node(1).Exec("EXISTS", key); got != ":0\r\n" {
		t.Fatalf("key still on the importing node: %q", got)
	}
}

// A cluster node replaced by another version is discovered afresh, while the
// other node's session keeps what it learned.
func TestClusterFailoverToAnotherVersionStartsFresh(t *testing.T) {
	c := startCluster(t, sim.Valkey90, sim.Valkey90)
	p := newPool(t, newClient(t, c.Addrs(), "", simPassword))
	key0, key1 := keyOnNode(t, c, 0), keyOnNode(t, c, 1)
	clusterSet(t, c, 0, key0, "tok")
	clusterSet(t, c, 1, key1, "tok")
	old0 := Pin(mustRelease(t, p, key0, "tok").Session)
	kept1 := Pin(mustRelease(t, p, key1, "tok").Session)
	if err := c.Failover(0, sim.Redis70); err != nil {
		t.Fatal(err)
	}
	pingBeforeEveryCommand(t, p)
	c.Node(0).ResetLog()
	c.Node(1).ResetLog()
	clusterSet(t, c, 0, key0, "tok")
	clusterSet(t, c, 1, key1, "tok")
	fresh0 := Pin(mustRelease(t, p, key0, "tok").Session)
	same1 := Pin(mustRelease(t, p, key1, "tok").Session)
	if fresh0 == old0 || same1 != kept1 {
		t.Fatalf("sessions: node 0 reused %v, node 1 kept %v", fresh0 == old0, same1 == kept1)
	}
	if got := lockCommands(c.Node(0).Log(), 0); !slices.Equal(got, []string{"DELEX", "DELIFEQ", "EVALSHA", "EVAL"}) {
		t.Fatalf("failed-over node saw %v; want fresh discovery down to Lua", got)
	}
	if got := lockCommands(c.Node(1).Log(), 0); !slices.Equal(got, []string{"DELIFEQ"}) {
		t.Fatalf("untouched node saw %v; want [DELIFEQ]", got)
	}
}
