package sim

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
)

// SlotCount is the number of cluster hash slots.
const SlotCount = 16384

// Slot returns the cluster hash slot of key (CRC16 XMODEM, honouring
// {hash tags}).
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % SlotCount
}

// migration is a slot moving between nodes (ASK semantics).
type migration struct{ from, to int }

// clusterState is the slot map shared by all nodes of a Cluster.
type clusterState struct {
	mu        sync.RWMutex
	owner     [SlotCount]int
	migrating map[int]migration
	addrs     []string
	ids       []string
	hidden    map[int]bool // left out of CLUSTER SLOTS/SHARDS (SetHidden)
}

// clusterView is one node's handle on the shared state.
type clusterView struct {
	state *clusterState
	self  int
}

func (e *Engine) ownsKey(key string) bool {
	st, slot := e.cluster.state, Slot(key)
	st.mu.RLock()
	defer st.mu.RUnlock()
	m, ok := st.migrating[slot]
	return st.owner[slot] == e.cluster.self || (ok && m.to == e.cluster.self)
}

// redirect applies cluster routing to a keyed command: CROSSSLOT, MOVED,
// ASK or TRYAGAIN; moved is false when the command may run here.
func (e *Engine) redirect(c *client, _ string, cmd *command, args []string, asking bool) (reply, bool) {
	if cmd.keys == nil {
		return reply{}, false
	}
	keys := cmd.keys(args)
	if len(keys) == 0 {
		return reply{}, false
	}
	slot := Slot(keys[0])
	for _, k := range keys[1:] {
		if Slot(k) != slot {
			return errReply("CROSSSLOT Keys in request don't hash to the same slot"), true
		}
	}
	st, self := e.cluster.state, e.cluster.self
	st.mu.RLock()
	owner, m, migrating := st.owner[slot], st.migrating[slot], false
	_, migrating = st.migrating[slot]
	addrs := st.addrs
	st.mu.RUnlock()
	if owner != self {
		if migrating && m.to == self && asking {
			return reply{}, false
		}
		return errorf("MOVED %d %s", slot, addrs[owner]), true
	}
	if !migrating || m.from != self {
		return reply{}, false
	}
	present := 0
	for _, k := range keys {
		if e.lookup(c, k) != nil {
			present++
		}
	}
	switch {
	case present == 0:
		return errorf("ASK %d %s", slot, addrs[m.to]), true
	case present < len(keys):
		return errReply("TRYAGAIN Multiple keys request during rehashing of slot"), true
	}
	return reply{}, false
}

func (e *Engine) askingCommand(c *client, _ []string) reply {
	if e.cluster == nil {
		return errReply("ERR This instance has cluster support disabled")
	}
	c.asking = true
	return okReply
}

// slotRanges lists [start, end] ranges per node index (index order).
func (st *clusterState) slotRanges() [][][2]int {
	out := make([][][2]int, len(st.addrs))
	start := 0
	for s := 1; s <= SlotCount; s++ {
		if s == SlotCount || st.owner[s] != st.owner[start] {
			o := st.owner[start]
			out[o] = append(out[o], [2]int{start, s - 1})
			start = s
		}
	}
	return out
}

func splitHostPort(addr string) (string, int64) {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.ParseInt(port, 10, 64)
	return host, p
}

func (e *Engine) clusterCommand(_ *client, args []string) reply {
	if e.cluster == nil {
		return errReply("ERR This instance has cluster support disabled")
	}
	st := e.cluster.state
	st.mu.RLock()
	defer st.mu.RUnlock()
	switch strings.ToLower(args[1]) {
	case "myid":
		return bulk(st.ids[e.cluster.self])
	case "slots":
		return st.slotsReply()
	case "shards":
		return st.shardsReply()
	case "keyslot":
		if len(args) != 3 {
			return wrongArity("cluster|keyslot")
		}
		return integer(int64(Slot(args[2])))
	case "info":
		return verbatim(fmt.Sprintf("cluster_state:ok\r\ncluster_slots_assigned:%d\r\ncluster_known_nodes:%d\r\ncluster_size:%d\r\n",
			SlotCount, len(st.addrs), len(st.addrs)))
	}
	return errorf("ERR unknown subcommand '%.128s'. Try CLUSTER HELP.", args[1])
}

func (st *clusterState) slotsReply() reply {
	var out []reply
	for node, ranges := range st.slotRanges() {
		if st.hidden[node] {
			continue
		}
		host, port := splitHostPort(st.addrs[node])
		for _, r := range ranges {
			out = append(out, array(integer(int64(r[0])), integer(int64(r[1])),
				array(bulk(host), integer(port), bulk(st.ids[node]), mapReply())))
		}
	}
	return array(out...)
}

func (st *clusterState) shardsReply() reply {
	var out []reply
	for node, ranges := range st.slotRanges() {
		if st.hidden[node] {
			continue
		}
		host, port := splitHostPort(st.addrs[node])
		var slots []reply
		for _, r := range ranges {
			slots = append(slots, integer(int64(r[0])), integer(int64(r[1])))
		}
		n := mapReply(bulk("id"), bulk(st.ids[node]), bulk("port"), integer(port),
			bulk("ip"), bulk(host), bulk("endpoint"), bulk(host), bulk("role"), bulk("master"),
			bulk("replication-offset"), integer(0), bulk("health"), bulk("online"))
		out = append(out, mapReply(bulk("slots"), array(slots...), bulk("nodes"), array(n)))
	}
	return array(out...)
}
