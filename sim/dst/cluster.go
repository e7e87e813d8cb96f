package dst

import (
	"slices"
	"strconv"
	"strings"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// This file is what the simulated nodes tell a client about the cluster:
// CLUSTER SLOTS, answered by every node from the schedule's slot map (the
// workload's keys on their owners, every other slot on the first node), so
// that the engine learns the topology itself, as it does from a real
// cluster, and corrects it from MOVED. During a migration the source still
// owns the slot, as on real clusters until the migration ends.

// clusterSlots answers cmd when it is CLUSTER SLOTS (ok false otherwise).
func (w *world) clusterSlots(cmd conn.Command) (conn.Reply, bool) {
	a := cmd.Args
	if len(a) != 2 || !strings.EqualFold(a[0], "CLUSTER") || !strings.EqualFold(a[1], "SLOTS") {
		return conn.Reply{}, false
	}
	owners := map[int]*node{}
	for key, n := range w.owner {
		owners[sim.Slot(key)] = n
	}
	moved := make([]int, 0, len(owners))
	for slot := range owners {
		moved = append(moved, slot)
	}
	slices.Sort(moved)
	var ranges []conn.Reply
	start := 0
	for _, slot := range moved {
		if slot > start {
			ranges = append(ranges, slotRange(start, slot-1, w.nodes[0]))
		}
		ranges = append(ranges, slotRange(slot, slot, owners[slot]))
		start = slot + 1
	}
	if start <= 16383 {
		ranges = append(ranges, slotRange(start, 16383, w.nodes[0]))
	}
	return conn.Reply{Kind: conn.ReplyArray, Array: ranges}, true
}

// slotRange is one CLUSTER SLOTS entry: first and last slot, then the
// primary as host, port and node id.
func slotRange(first, last int, n *node) conn.Reply {
	host, port, _ := strings.Cut(n.addr, ":")
	p, _ := strconv.ParseInt(port, 10, 64)
	primary := conn.Reply{Kind: conn.ReplyArray, Array: []conn.Reply{
		{Kind: conn.ReplyBulk, Text: host}, {Kind: conn.ReplyInt, Int: p}, {Kind: conn.ReplyBulk, Text: n.name}}}
	return conn.Reply{Kind: conn.ReplyArray, Array: []conn.Reply{
		{Kind: conn.ReplyInt, Int: int64(first)}, {Kind: conn.ReplyInt, Int: int64(last)}, primary}}
}

// isClientKill reports whether cmd is a CLIENT KILL (a fence, a probe).
func isClientKill(cmd conn.Command) bool {
	return len(cmd.Args) > 1 && strings.EqualFold(cmd.Args[0], "CLIENT") && strings.EqualFold(cmd.Args[1], "KILL")
}
