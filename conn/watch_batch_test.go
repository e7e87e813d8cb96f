package conn_test

import (
	"errors"
	"fmt"
	. "github.com/respire-go/respire/conn"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// invalidations collects the keys p's invalidation handler is given, per
// node.
type invalidations struct {
	mu   sync.Mutex
	keys map[string]string // key → the node that pushed it
}

// watchInvalidations sets p's handler to collect into a fresh invalidations.
func watchInvalidations(p *Pool) *invalidations {
	inv := &invalidations{keys: map[string]string{}}
	p.SetInvalidationHandler(func(node string, keys []string) {
		inv.mu.Lock()
		defer inv.mu.Unlock()
		for _, k := range keys {
			inv.keys[k] = node
		}
	})
	return inv
}

// waitFor waits (at most 10 s) until every key was pushed, and returns the
// node that pushed each.
func (inv *invalidations) waitFor(t *testing.T, keys []string) map[string]string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		inv.mu.Lock()
		missing := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { _, ok := inv.keys[k]; return ok })
		got := maps.Clone(inv.keys)
		inv.mu.Unlock()
		if len(missing) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("no invalidation for %v: the reads did not track them", missing)
		}
		time.Sleep(time.Millisecond)
	}
}

// watcherEntries returns the watcher's commands in log (those of the
// connection that sent CLIENT CACHING), as "CACHING" and "GET key".
func watcherEntries(log []sim.Entry) []string {
	var id int64
	var out []string
	for _, e := range log {
		caching := len(e.Args) == 3 && e.Args[0] == "CLIENT" && e.Args[1] == "CACHING" && e.Args[2] == "YES"
		if id == 0 && caching {
			id = e.ClientID
		}
		switch {
		case id == 0 || e.ClientID != id:
		case caching:
			out = append(out, "CACHING")
		case e.Args[0] == "GET":
			out = append(out, "GET "+e.Args[1])
		}
	}
	return out
}

// pairs is the watcher's expected commands for keys: CACHING before each GET.
func pairs(keys []string) []string {
	var out []string
	for _, k := range keys {
		out = append(out, "CACHING", "GET "+k)
	}
	return out
}

// TestPushDetectsLoss_WatchReadManySendsANodesKeysInOneRoundTrip: the
// keys of one node are sent in one round trip: with the watcher's replies
// held in a proxy, the server still receives CLIENT CACHING YES + GET for
// every key, in order, on the one watcher. The results are per key (a
// token, another owner's token, a missing key), and every key is tracked:
// a change of each reaches the handler.
func TestPushDetectsLoss_WatchReadManySendsANodesKeysInOneRoundTrip(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	proxy, err := faultproxy.Start(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	p := newPool(t, newClient(t, []string{proxy.Addr()}, "", simPassword))
	inv := watchInvalidations(p)
	keys := []string{"k0", "k1", "other", "missing", "k4", "k5", "k6", "k7"}
	for _, k := range keys {
		if k != "missing" {
			mustSet(t, srv, k, "tok-"+k)
		}
	}
	mustSet(t, srv, "other", "someone-else")
	node, _, _, err := p.WatchRead(ctxT(t), "opener") // the watcher's handshake, before the stall
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetLog()
	proxy.StallAll(faultproxy.ToClient)
	t.Cleanup(func() { proxy.UnstallAll(faultproxy.Both) })
	done := make(chan []WatchReadResult, 1)
	go func() { done <- p.WatchReadMany(ctxT(t), keys, nil) }()
	last := keys[len(keys)-1]
	if _, err := srv.WaitFor(ctxT(t), func(e sim.Entry) bool { return e.Args[0] == "GET" && e.Args[1] == last }); err != nil {
		t.Fatalf("the last key's GET never reached the server while the replies were held: %v", err)
	}
	if got := watcherEntries(srv.Log()); !slices.Equal(got, pairs(keys)) {
		t.Fatalf("watcher received %v; want %v", got, pairs(keys))
	}
	proxy.UnstallAll(faultproxy.ToClient)
	results := <-done
	for i, k := range keys {
		want := WatchReadResult{Node: node, Token: "tok-" + k, Found: true}
		switch k {
		case "missing":
			want = WatchReadResult{Node: node}
		case "other":
			want.Token = "someone-else"
		}
		if results[i] != want {
			t.Errorf("%s: %+v; want %+v", k, results[i], want)
		}
	}
	for _, k := range keys {
		srv.Exec("SET", k, "changed")
	}
	inv.waitFor(t, keys)
}

// TestPushFallsBackToPolling_WatchReadManyRefusedCachingEndsEveryKey: a
// user denied CLIENT CACHING (but not CLIENT TRACKING) gets an error reply
// to each key's CACHING YES in the batch: every key's result matches
// ErrTrackingRefused, the refusal is remembered for the node, and the next
// batch sends nothing.
func TestPushFallsBackToPolling_WatchReadManyRefusedCachingEndsEveryKey(t *testing.T) {
	srv := startSim(t, sim.Redis70)
	srv.SetUser("locker", "lockerpw", "set", "get", "client|info", "client|tracking")
	p := newPool(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw"))
	keys := []string{"a", "b", "c"}
	for _, r := range p.WatchReadMany(ctxT(t), keys, nil) {
		if !errors.Is(r.Err, ErrTrackingRefused) || r.Node != srv.Addr() {
			t.Fatalf("result %+v; want ErrTrackingRefused from %s", r, srv.Addr())
		}
	}
	if got := watcherEntries(srv.Log()); !slices.Equal(got, pairs(keys)) {
		t.Fatalf("watcher received %v; want one batch %v", got, pairs(keys))
	}
	if !p.TrackingRefused(srv.Addr()) {
		t.Fatal("refusal not remembered")
	}
	srv.ResetLog()
	for _, r := range p.WatchReadMany(ctxT(t), keys, nil) {
		if !errors.Is(r.Err, ErrTrackingRefused) {
			t.Fatalf("second batch: %+v; want ErrTrackingRefused", r)
		}
	}
	for _, e := range srv.Log() {
		if e.Args[0] == "CLIENT" || e.Args[0] == "GET" {
			t.Fatalf("the remembered refusal sent %v", e.Args)
		}
	}
}

// TestPushFollowsTheSlot_WatchReadManyOneBatchPerNode: on a three-node
// cluster each node's keys go to that node's watcher as one batch (CACHING
// YES + GET per key, on one connection), and a key whose slot moved after
// the slot map was read is answered MOVED and read again on its new owner,
// which tracks it from then on.
func TestPushFollowsTheSlot_WatchReadManyOneBatchPerNode(t *testing.T) {
	c := startCluster(t, sim.Valkey90, sim.Redis70, sim.Valkey81)
	p := newPool(t, newClient(t, c.Addrs(), "", simPassword))
	inv := watchInvalidations(p)
	var keys []string
	perNode := make([][]string, 3)
	for n := 0; len(keys) < 12; n++ {
		key := fmt.Sprintf("batch-%d", n)
		if i := c.NodeFor(key); len(perNode[i]) < 4 {
			perNode[i] = append(perNode[i], key)
			keys = append(keys, key)
			clusterSet(t, c, i, key, "tok-"+key)
		}
	}
	if _, _, _, err := p.WatchRead(ctxT(t), perNode[0][0]); err != nil { // the slot map is read now
		t.Fatal(err)
	}
	moved := perNode[0][1]
	c.MoveSlot(sim.Slot(moved), 1) // unknown to the pool: node 0 answers MOVED
	for i := range 3 {
		c.Node(i).ResetLog()
	}
	results := p.WatchReadMany(ctxT(t), keys, nil)
	for i, k := range keys {
		node := c.NodeFor(k)
		if r := results[i]; r.Err != nil || !r.Found || r.Token != "tok-"+k || r.Node != c.Addrs()[node] {
			t.Errorf("%s: %+v; want tok-%s found on node %d (%s)", k, r, k, node, c.Addrs()[node])
		}
	}
	for i := range 3 {
		want := pairs(perNode[i])
		if i == 1 {
			want = append(want, pairs([]string{moved})...) // the redirected key, in a second batch
		}
		if got := watcherEntries(c.Node(i).Log()); !slices.Equal(got, want) {
			t.Errorf("node %d's watcher received %v; want %v", i, got, want)
		}
	}
	for _, k := range keys {
		clusterSet(t, c, c.NodeFor(k), k, "changed")
	}
	for k, node := range inv.waitFor(t, keys) {
		if slices.Contains(keys, k) && node != c.Addrs()[c.NodeFor(k)] {
			t.Errorf("%s was pushed by %s; want its owner %s", k, node, c.Addrs()[c.NodeFor(k)])
		}
	}
}

// TestPushFollowsTheSlot_WatchReadManyOnARealCluster: on the real 7.0
// cluster, keys spread over every master are each read on, and tracked by,
// the watcher of their slot's master: the node named in each result
// answers a plain GET of the key (no MOVED), and a change of each key is
// pushed by that node.
func TestPushFollowsTheSlot_WatchReadManyOnARealCluster(t *testing.T) {
	list := os.Getenv("RESPIRE_REAL_CLUSTER70")
	if list == "" {
		t.Skip("RESPIRE_REAL_CLUSTER70 not set: no real redis-server 7.0 cluster (scripts/with-servers.sh starts one)")
	}
	lockRealServer(t, list)
	password := os.Getenv("RESPIRE_REAL_CLUSTER70_PASSWORD")
	p := newPool(t, newClient(t, strings.Split(list, ","), "", password))
	client := newOutsider(t, strings.Split(list, ","), "", password)
	inv := watchInvalidations(p)
	ctx := ctxT(t)
	prefix := fmt.Sprintf("conn-batch:%d:", time.Now().UnixNano())
	keys := make([]string, 24) // on every master of 3 with overwhelming likelihood
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", prefix, i)
		if err := client.Do(ctx, client.B().Set().Key(keys[i]).Value("tok").Px(time.Minute).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, k := range keys {
			client.Do(ctx, client.B().Del().Key(k).Build())
		}
	})
	nodes := map[string]bool{}
	for i, r := range p.WatchReadMany(ctx, keys, nil) {
		if r.Err != nil || !r.Found || r.Token != "tok" {
			t.Fatalf("%s: %+v", keys[i], r)
		}
		node := client.Nodes()[r.Node]
		direct, err := node.Do(ctx, node.B().Get().Key(keys[i]).Build()).ToString()
		if err != nil || direct != "tok" {
			t.Fatalf("%s: GET on %s = %q, %v; want the key there", keys[i], r.Node, direct, err)
		}
		nodes[r.Node] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("the keys were read on %v; want several masters", nodes)
	}
	for _, k := range keys {
		if err := client.Do(ctx, client.B().Set().Key(k).Value("changed").Px(time.Minute).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	pushed := inv.waitFor(t, keys)
	for i, r := range p.WatchReadMany(ctx, keys, nil) {
		if pushed[keys[i]] != r.Node {
			t.Errorf("%s was pushed by %s; read on %s", keys[i], pushed[keys[i]], r.Node)
		}
	}
}
