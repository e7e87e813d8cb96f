package sim

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
)

// ClusterConfig configures a simulated cluster: one master per profile,
// the 16384 slots split evenly in order.
type ClusterConfig struct {
	Profiles []Profile
	Password string // password of every node's "default" user
	Clock    Clock  // shared by all nodes; nil means real time
}

// Cluster is a set of simulated masters sharing one slot map. All methods
// are safe for concurrent use. The zero value is not usable.
type Cluster struct {
	state *clusterState
	nodes []*Server
}

// StartCluster starts one node per profile on free loopback ports. It does
// not block; ctx only bounds the listen calls.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if len(cfg.Profiles) == 0 {
		return nil, errors.New("sim: cluster needs at least one profile")
	}
	c := &Cluster{state: &clusterState{migrating: map[int]migration{}, hidden: map[int]bool{}}}
	for i, p := range cfg.Profiles {
		s, err := listen(ctx, Config{Profile: p, Password: cfg.Password, Clock: cfg.Clock})
		if err != nil {
			for _, n := range c.nodes {
				n.ln.Close()
			}
			return nil, err
		}
		sum := sha1.Sum(fmt.Appendf(nil, "respire-sim-node-%d-%s", i, s.Addr()))
		c.state.addrs = append(c.state.addrs, s.Addr())
		c.state.ids = append(c.state.ids, hex.EncodeToString(sum[:]))
		c.nodes = append(c.nodes, s)
	}
	for slot := range SlotCount {
		c.state.owner[slot] = slot * len(c.nodes) / SlotCount
	}
	for i, s := range c.nodes {
		s.e.cluster = &clusterView{state: c.state, self: i}
		s.serve()
	}
	return c, nil
}

// Addrs returns the nodes' addresses in node order.
func (c *Cluster) Addrs() []string {
	c.state.mu.RLock()
	defer c.state.mu.RUnlock()
	return append([]string(nil), c.state.addrs...)
}

// Node returns node i's server.
func (c *Cluster) Node(i int) *Server { return c.nodes[i] }

// NodeFor returns the index of the node owning key's slot.
func (c *Cluster) NodeFor(key string) int {
	c.state.mu.RLock()
	defer c.state.mu.RUnlock()
	return c.state.owner[Slot(key)]
}

// Close closes every node and waits for their goroutines.
func (c *Cluster) Close() error {
	for _, n := range c.nodes {
		n.Close()
	}
	return nil
}

// Failover replaces node i by a server of profile p; see Server.Failover.
func (c *Cluster) Failover(i int, p Profile) error { return c.nodes[i].Failover(p) }

// MoveSlot gives slot to node to at once, moving its keys; the old owner
// then answers -MOVED, and the connections tracking a moved key there get
// its invalidation, as MIGRATE's delete at the source sends it. It ends
// any migration of the slot.
func (c *Cluster) MoveSlot(slot, to int) {
	c.state.mu.RLock()
	from := c.state.owner[slot]
	c.state.mu.RUnlock()
	c.transfer(slot, from, to)
	c.nodes[from].e.wakePushed()
}

// SetHidden leaves node i out of (hidden) or puts it back into the CLUSTER
// SLOTS and SHARDS replies. Hidden, it still serves its slots and redirects
// still point to it: a client that read the topology meanwhile does not know
// the node, as with a node added to the cluster after the client started.
func (c *Cluster) SetHidden(i int, hidden bool) {
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
	c.state.hidden[i] = hidden
}

// StartMigration marks slot as migrating from node from to node to: from
// answers -ASK for commands whose keys are all absent there, and to
// accepts such commands right after ASKING (one-shot).
func (c *Cluster) StartMigration(slot, from, to int) {
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
	c.state.owner[slot] = from
	c.state.migrating[slot] = migration{from: from, to: to}
}

// FinishMigration moves the slot's remaining keys to the migration target
// and makes it the owner. It does nothing when slot is not migrating.
func (c *Cluster) FinishMigration(slot int) {
	c.state.mu.RLock()
	m, ok := c.state.migrating[slot]
	c.state.mu.RUnlock()
	if ok {
		c.transfer(slot, m.from, m.to)
		c.nodes[m.from].e.wakePushed()
	}
}

// transfer moves slot's keys (every db) from one engine to another and
// updates the owner, holding both engines' locks (in index order, then
// the state lock) so no command sees a half-moved slot.
func (c *Cluster) transfer(slot, from, to int) {
	first, second := c.nodes[from].e, c.nodes[to].e
	if to < from {
		first, second = second, first
	}
	first.mu.Lock()
	if first != second {
		second.mu.Lock()
		defer second.mu.Unlock()
	}
	defer first.mu.Unlock()
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
	src, dst := c.nodes[from].e, c.nodes[to].e
	for db := range src.dbs {
		for k, v := range src.dbs[db] {
			if Slot(k) == slot {
				if src != dst {
					dst.dbs[db][k] = v
					delete(src.dbs[db], k)
					src.keyModified(k, 0) // MIGRATE deletes the key at the source: its trackers are told
				}
			}
		}
	}
	c.state.owner[slot] = to
	delete(c.state.migrating, slot)
}

// wakePushed writes the invalidations a slot transfer queued on e to their
// connections (commands do it when they end; a transfer is no command).
func (e *Engine) wakePushed() {
	e.mu.Lock()
	e.unlockAndCloseVictims(0)
}
