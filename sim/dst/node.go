package dst

import (
	"io"
	"strconv"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// node is the simulated server: one sim.Engine at a time. A failover
// replaces the engine (another profile, empty script cache, every
// connection dropped) and bumps the generation; the keyspace is copied,
// as a fully replicated replica would have it.
type node struct {
	index      int
	name       string // "n1"
	addr       string // what MOVED replies name
	engine     *sim.Engine
	profile    sim.Profile
	generation int
	paused     bool
	resumeAt   time.Duration
	keys       []string // every key the workload uses (lock keys and their fencing counters)
	cache      map[string]keyCache
	byID       map[int64]*connection // every connection by CLIENT ID (current generation)
}

func newNode(w *world, profile sim.Profile, keys []string) *node {
	i := len(w.nodes)
	n := &node{index: i, name: "n" + strconv.Itoa(i+1), addr: "10.0.1." + strconv.Itoa(i+1) + ":6379",
		engine:  sim.NewEngine(sim.Config{Profile: profile, Clock: w}),
		profile: profile, generation: 1, keys: keys, cache: map[string]keyCache{},
		byID: map[int64]*connection{}}
	w.nodes = append(w.nodes, n)
	return n
}

// exec runs r's command for c on the engine, with the checker watching
// the lock key before and after. ok is false when the engine refused the
// client (killed by CLIENT KILL).
func (n *node) exec(w *world, c *connection, r *request) (conn.Reply, bool) {
	if n.engine.Killed(c.clientID) {
		return conn.Reply{}, false
	}
	if slots, ok := w.clusterSlots(r.cmd); ok {
		return slots, true
	}
	if moved, ok := n.moved(w, c, r.cmd); ok {
		w.trace.logf(w, c.proc, "", "%s answered %s with %s", n.name, r.cmd.Args[0], moved.Text)
		return moved, true
	}
	before := w.check.beforeExec(w, c, r)
	args := make([][]byte, len(r.cmd.Args))
	for i, a := range r.cmd.Args {
		args[i] = []byte(a)
	}
	out := n.engine.Exec(c.clientID, args...)
	if out == nil {
		return conn.Reply{}, false
	}
	w.stats.Commands++
	reply := parseReply(out)
	if w.trace.enabled {
		w.trace.logf(w, c.proc, "", "%s ran %s on id=%d%s -> %s", n.name, w.trace.redact(r.cmd.Args), c.clientID, r.opLabel(),
			replyString(reply))
	}
	if isClientKill(r.cmd) {
		w.reapKilled() // the server closes the killed connections at once
	}
	w.check.afterExec(w, c, r, before)
	w.check.afterGuardExec(w, r, before, reply)
	w.check.afterMemberExec(w, c, r, reply)
	w.check.afterFairExec(w, n, r, reply)
	w.afterScriptExec(r, reply)
	return reply, true
}

// keyCache is what the server held for a key at its last change: read
// after every lock command, so the checker need not ask the engine after
// every step. expireAtMs is the engine's absolute expiry (0 = none).
type keyCache struct {
	token      string
	found      bool
	expireAtMs int64
}

// state returns key's owner now, from the cache, expiring it exactly as the
// engine does (alive while now in ms <= expireAt).
func (n *node) state(w *world, key string) keyState {
	c, ok := n.cache[key]
	if !ok {
		c = n.refresh(w, key)
	}
	if !c.found || (c.expireAtMs != 0 && w.Now().UnixMilli() > c.expireAtMs) {
		return keyState{}
	}
	return keyState{token: c.token, found: true, pttl: c.expireAtMs - w.Now().UnixMilli()}
}

// refresh reads key from the engine into the cache.
func (n *node) refresh(w *world, key string) keyCache {
	token, found, pttl := n.owner(key)
	c := keyCache{token: token, found: found}
	if found && pttl >= 0 {
		c.expireAtMs = w.Now().UnixMilli() + pttl
	}
	n.cache[key] = c
	return c
}

// owner reads key's value and remaining TTL as an administrator.
func (n *node) owner(key string) (token string, found bool, pttl int64) {
	r := parseReply([]byte(n.engine.AdminExec("GET", key)))
	if r.Kind != conn.ReplyBulk {
		return "", false, 0
	}
	t := parseReply([]byte(n.engine.AdminExec("PTTL", key)))
	return r.Text, true, t.Int
}

// failover replaces the engine by one of profile, copying the keys.
func (n *node) failover(w *world, profile sim.Profile) {
	if len(w.prims) > 0 {
		n.failoverInPlace(w, profile)
		return
	}
	next := sim.NewEngine(sim.Config{Profile: profile, Clock: w})
	for _, k := range n.keys {
		v, found, pttl := n.owner(k)
		if !found {
			continue
		}
		if pttl >= 0 {
			// alive through this millisecond: PX 0 is invalid, so PX 1
			next.AdminExec("SET", k, v, "PX", strconv.FormatInt(max(pttl, 1), 10))
		} else {
			next.AdminExec("SET", k, v)
		}
	}
	old := n.engine
	n.engine, n.profile = next, profile
	n.generation++
	clear(n.byID)
	w.stats.Failovers++
	w.trace.logf(w, nil, "", "fault: %s fails over to %s (generation %d)", n.name, profile, n.generation)
	for _, c := range w.conns {
		if !c.closed && c.node == n && c.generation == n.generation-1 {
			old.CloseClient(c.clientID)
			w.closeConn(c, io.EOF)
		}
	}
	for _, k := range n.keys {
		n.refresh(w, k)
	}
}

// moved applies cluster routing to a command arriving at n, as a cluster
// node does (MOVED and ASK name the slot and the owner's address): ASKING is noted for the next
// command; a key whose slot n does not own gets MOVED; while the slot
// migrates away from n, a key absent here gets ASK; the migration target
// accepts the key only right after ASKING. A redirected command does not
// run. The slot map is the runtime's; one owner change per schedule.
func (n *node) moved(w *world, c *connection, cmd conn.Command) (conn.Reply, bool) {
	if cmd.Args[0] == "ASKING" {
		c.asking = true
		return conn.Reply{Kind: conn.ReplyStatus, Text: "OK"}, true
	}
	asking := c.asking
	c.asking = false
	key := routingKey(cmd.Args)
	if key == "" {
		return conn.Reply{}, false
	}
	lockKey := w.slotKey(key)
	owner, slot := w.ownerOf(lockKey), strconv.Itoa(sim.Slot(key))
	m := w.migrating[lockKey]
	if reply, redirected := n.migratingMultiKey(w, cmd, owner, m, asking); redirected {
		return reply, true
	}
	switch {
	case owner == n && m != nil && m.to != n && !isMultiKeyScript(cmd) && !n.state(w, key).found:
		return conn.Reply{Kind: conn.ReplyError, Text: "ASK " + slot + " " + m.to.addr}, true
	case owner == n, m != nil && m.to == n && asking:
		return conn.Reply{}, false
	}
	return conn.Reply{Kind: conn.ReplyError, Text: "MOVED " + slot + " " + owner.addr}, true
}

// slotKey returns the workload's key whose slot key is in (a lock key for
// its guarded writes' records and data), key itself when it is one.
func (w *world) slotKey(key string) string {
	if w.owner[key] != nil {
		return key
	}
	for _, k := range w.keys { // in a fixed order: a schedule is a function of its seed
		if sim.Slot(k) == sim.Slot(key) {
			return k
		}
	}
	return key
}

// ownerOf is the node that owns key's slot: the workload's keys where the
// schedule put them, every other key on the first node.
func (w *world) ownerOf(key string) *node {
	if n := w.owner[key]; n != nil {
		return n
	}
	return w.nodes[0]
}

// migration is a slot moving between two nodes (ASK phase).
type migration struct{ from, to *node }

// startMigration marks key's slot as migrating from its owner to to; it
// finishes (the remaining key moves, MOVED from then on) after d.
func (w *world) startMigration(key string, to *node, d time.Duration) {
	from := w.owner[key]
	w.migrating[key] = &migration{from: from, to: to}
	w.stats.SlotMoves++
	w.trace.logf(w, nil, "", "fault: slot %d (%s) migrating %s -> %s (%s) for %s", sim.Slot(key), key, from.name, to.name, to.profile, d)
	w.schedule(nil, w.now+d, func() {
		delete(w.migrating, key)
		w.moveSlot(key, to)
	})
}

// keyState is the cluster's view of key: on the owner, or during a
// migration on the target once the owner no longer has it.
func (w *world) keyState(key string) keyState {
	s := w.owner[key].state(w, key)
	if m := w.migrating[key]; m != nil && !s.found {
		return m.to.state(w, key)
	}
	return s
}

// moveSlot gives key's slot to node to: the key is copied with its TTL and
// deleted from the old owner, which then answers MOVED.
func (w *world) moveSlot(key string, to *node) {
	from := w.owner[key]
	v, found, pttl := from.owner(key)
	if found && pttl >= 0 {
		to.engine.AdminExec("SET", key, v, "PX", strconv.FormatInt(max(pttl, 1), 10))
	} else if found {
		to.engine.AdminExec("SET", key, v)
	}
	from.engine.AdminExec("DEL", key)
	copyCounter(from, to, key)
	if w.owner[key] != to && w.migrating[key] == nil {
		w.stats.SlotMoves++
	}
	w.owner[key] = to
	from.refresh(w, key)
	to.refresh(w, key)
	w.trace.logf(w, nil, "", "fault: slot %d (%s) moves %s -> %s (%s)", sim.Slot(key), key, from.name, to.name, to.profile)
}

// nodeByAddr finds the node a MOVED reply names.
func (w *world) nodeByAddr(addr string) *node {
	for _, n := range w.nodes {
		if n.addr == addr {
			return n
		}
	}
	return nil
}

// denyACL makes the default user lose one permission the lock uses.
func (n *node) denyACL(w *world, perm string) {
	w.stats.ACLDenials++
	reply := n.engine.AdminExec("ACL", "SETUSER", "default", "-"+perm)
	w.trace.logf(w, nil, "", "fault: ACL denies %s (%s)", perm, trimCRLF(reply))
}

func trimCRLF(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

// replyString renders a reply for the transcript.
func replyString(r conn.Reply) string {
	switch r.Kind {
	case conn.ReplyStatus:
		return "+" + r.Text
	case conn.ReplyError:
		return "-" + r.Text
	case conn.ReplyInt:
		return ":" + strconv.FormatInt(r.Int, 10)
	case conn.ReplyNil:
		return "(nil)"
	case conn.ReplyArray:
		return "*" + strconv.Itoa(len(r.Array))
	}
	return "$" + strconv.Itoa(len(r.Text))
}

// reapKilled marks every connection the server killed as closed by the
// server (the process notices it a little later).
func (w *world) reapKilled() {
	for _, c := range w.conns {
		if !c.closed && c.generation == c.node.generation && c.node.engine.Killed(c.clientID) {
			w.serverClose(c)
		}
	}
}
