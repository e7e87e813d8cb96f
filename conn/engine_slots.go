package conn

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// clusterSlots is the number of cluster hash slots.
const clusterSlots = 16384

// slotTable is the cluster's slot → primary map, learned with CLUSTER SLOTS
// on first need, updated from MOVED replies, and read again when a node
// failed or the cluster said it cannot serve a slot (stale): no MOVED ever
// comes from a primary that died.
type slotTable struct {
	mu    sync.RWMutex
	owner [clusterSlots]string

	stale    atomic.Bool  // read CLUSTER SLOTS again before the next route
	loadedAt atomic.Int64 // clock time of the last successful read
}

// slotsReloadGap bounds how often a stale slot map is read again.
const slotsReloadGap = 100 * time.Millisecond

// ErrNoSlotOwner is the cause (NotSubmitted) when no node of the cluster
// is known to serve a key's slot.
var ErrNoSlotOwner = errors.New("no node of the cluster serves the key's slot")

// markSlotsStale makes the next route read CLUSTER SLOTS again (cluster
// mode; at most every slotsReloadGap).
func (e *Engine) markSlotsStale() {
	if e.slots != nil {
		e.slots.stale.Store(true)
	}
}

// routeSlot returns the primary of slot, reading CLUSTER SLOTS when the
// map is stale or does not know the slot.
func (e *Engine) routeSlot(ctx context.Context, op string, slot int) (string, error) {
	t := e.slots
	if t.stale.Load() && int64(e.clock.Now())-t.loadedAt.Load() >= int64(slotsReloadGap) {
		_ = e.loadSlots(ctx, op) // on failure the old map stays, stale, for the next route
	}
	if node := t.lookup(slot); node != "" {
		return node, nil
	}
	if err := e.loadSlots(ctx, op); err != nil {
		return "", err
	}
	if node := t.lookup(slot); node != "" {
		return node, nil
	}
	return "", &Error{Class: NotSubmitted, Op: op, Err: ErrNoSlotOwner}
}

func (t *slotTable) lookup(slot int) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.owner[slot]
}

// learnSlot records addr as slot's primary (a MOVED reply named it).
func (e *Engine) learnSlot(slot int, addr string) {
	if e.slots == nil || slot < 0 || slot >= clusterSlots {
		return
	}
	e.slots.mu.Lock()
	old := e.slots.owner[slot]
	e.slots.owner[slot] = addr
	e.slots.mu.Unlock()
	if old != "" && old != addr {
		e.slotMoved(old) // keys tracked on old may live elsewhere now: read them again
	}
}

// loadSlots asks a node the client knows for CLUSTER SLOTS, on that node's
// fence connection (which never carries a lock command), and replaces the
// map (slots no range covers are forgotten). Failures are NotSubmitted:
// CLUSTER SLOTS is a read, and the lock command was not sent.
func (e *Engine) loadSlots(ctx context.Context, op string) error {
	nodes, err := e.client.Nodes(ctx)
	if err != nil || len(nodes) == 0 {
		return &Error{Class: NotSubmitted, Op: op, Err: errors.Join(ErrNoSlotOwner, err)}
	}
	var last error
	for _, node := range nodes {
		reply, err := e.control(ctx, node, ClusterSlotsCommand())
		if err != nil {
			last = err
			continue
		}
		if reply.Kind == ReplyError {
			return &Error{Class: Definite, Op: op, Addr: node, Err: replyErr(reply)}
		}
		e.storeSlots(reply)
		return nil
	}
	return &Error{Class: NotSubmitted, Op: op, Err: last}
}

// storeSlots replaces the map with CLUSTER SLOTS' reply.
func (e *Engine) storeSlots(reply Reply) {
	var owner [clusterSlots]string
	for _, r := range reply.Array {
		start, end, addr, ok := parseSlotsEntry(r)
		for slot := start; ok && slot <= end && slot < clusterSlots; slot++ {
			owner[slot] = addr
		}
	}
	e.slots.mu.Lock()
	e.slots.owner = owner
	e.slots.mu.Unlock()
	e.slots.loadedAt.Store(int64(e.clock.Now()))
	e.slots.stale.Store(false)
}

// parseSlotsEntry reads one CLUSTER SLOTS entry: [start, end, [host, port, …], …].
// An entry whose range is not one (a negative start, an end before its
// start) is refused: no server sends one, and a slot index must never be
// negative.
func parseSlotsEntry(r Reply) (start, end int64, addr string, ok bool) {
	if r.Kind != ReplyArray || len(r.Array) < 3 || r.Array[2].Kind != ReplyArray || len(r.Array[2].Array) < 2 {
		return 0, 0, "", false
	}
	if r.Array[0].Int < 0 || r.Array[1].Int < r.Array[0].Int {
		return 0, 0, "", false
	}
	master := r.Array[2].Array
	host, port := master[0].Text, master[1].Int
	if master[1].Kind != ReplyInt {
		port, _ = strconv.ParseInt(master[1].Text, 10, 64)
	}
	return r.Array[0].Int, r.Array[1].Int, net.JoinHostPort(host, strconv.FormatInt(port, 10)), true
}

// keySlot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its
// hash tag (the text between the first "{" and the next "}", when not
// empty), or of the whole key, modulo 16384.
func keySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^key[i]]
	}
	return int(crc % clusterSlots)
}

// crc16Table is CRC-16/XMODEM's table (polynomial 0x1021).
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

// slotUnservedReply reports whether text says the node cannot serve the
// slot now: the cluster is down for it (CLUSTERDOWN), it moves
// (TRYAGAIN), or the node is no primary for it (READONLY, MASTERDOWN).
func slotUnservedReply(text string) bool {
	code, _, _ := strings.Cut(text, " ")
	switch code {
	case "CLUSTERDOWN", "TRYAGAIN", "READONLY", "MASTERDOWN":
		return true
	}
	return false
}
