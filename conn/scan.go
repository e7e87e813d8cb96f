package conn

import (
	"context"
	"slices"
	"strconv"
)

// This file is what Locks.List needs of the engine: the primaries to walk,
// one SCAN step on each, and the read-only scripts that describe a key.
// The SCAN goes on the node's fence connection, as CLUSTER SLOTS does: it
// is a read of key names, which neither fences nor settles anything, and a
// failure of it must not retire a session that carries locks.

// scanOp is the Op field of a walk's errors.
const scanOp = "scan"

// ScanCommand is SCAN cursor MATCH match COUNT count (count at least 1).
func ScanCommand(cursor uint64, match string, count int) Command {
	return Command{Args: []string{"SCAN", strconv.FormatUint(cursor, 10), "MATCH", match,
		"COUNT", strconv.Itoa(max(count, 1))}, Key: -1}
}

// Primaries returns the address of every primary, sorted: the one node of
// a standalone client, the primary a Sentinel client knows now, or every
// primary of the cluster's slot map (read with CLUSTER SLOTS first when
// stale or not known yet). It sends nothing outside cluster mode.
func (e *Engine) Primaries(ctx context.Context) ([]string, error) {
	if e.mode != ModeCluster {
		node, err := e.primary(ctx)
		if err != nil {
			return nil, &Error{Class: NotSubmitted, Op: scanOp, Err: err}
		}
		return []string{node}, nil
	}
	t := e.slots
	if t.stale.Load() || t.loadedAt.Load() == 0 {
		if err := e.loadSlots(ctx, scanOp); err != nil {
			return nil, err
		}
	}
	t.mu.RLock()
	var nodes []string
	for _, n := range t.owner {
		if n != "" && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	t.mu.RUnlock()
	slices.Sort(nodes)
	if len(nodes) == 0 {
		return nil, &Error{Class: NotSubmitted, Op: scanOp, Err: ErrNoSlotOwner}
	}
	return nodes, nil
}

// Scan runs one SCAN cursor MATCH match COUNT count on node (an address
// Primaries returned) and returns the next cursor (0 once the walk of node
// is over) and the keys of this step. It changes nothing on the server.
// Errors are *Error values; a server error reply is Definite.
func (e *Engine) Scan(ctx context.Context, node string, cursor uint64, match string, count int) (uint64, []string, error) {
	if err := e.clientClosed(); err != nil {
		return 0, nil, &Error{Class: NotSubmitted, Op: scanOp, Addr: node, Err: err}
	}
	reply, err := e.control(ctx, node, ScanCommand(cursor, match, count))
	if err != nil {
		return 0, nil, err
	}
	if reply.Kind == ReplyError {
		return 0, nil, &Error{Class: Definite, Op: scanOp, Addr: node, Err: replyErr(reply)}
	}
	next, keys, ok := scanReply(reply)
	if !ok {
		return 0, nil, &Error{Class: Definite, Op: scanOp, Addr: node, Err: unexpected(reply)}
	}
	return next, keys, nil
}

// scanReply reads SCAN's reply: [cursor, [key…]].
func scanReply(r Reply) (next uint64, keys []string, ok bool) {
	if r.Kind != ReplyArray || len(r.Array) != 2 || r.Array[1].Kind != ReplyArray {
		return 0, nil, false
	}
	next, err := strconv.ParseUint(r.Array[0].Text, 10, 64)
	if err != nil {
		return 0, nil, false
	}
	keys = make([]string, 0, len(r.Array[1].Array))
	for _, k := range r.Array[1].Array {
		keys = append(keys, k.Text)
	}
	return next, keys, true
}

// The kinds KeyKindScript tells apart.
const (
	KeyKindNone   = 0 // no such key (it ended since the SCAN)
	KeyKindString = 1 // a mutex's key, or a read/write lock's writer key
	KeyKindZSet   = 2 // a semaphore's holders, a read/write lock's readers, a fair queue
	KeyKindOther  = 3 // not a lock's key
)

// KeyKindScript tells what KEYS[1] is (the KeyKind constants).
const KeyKindScript = "local t = redis.call('type', KEYS[1]).ok\n" +
	"if t == 'none' then return 0 end\n" +
	"if t == 'string' then return 1 end\n" +
	"if t == 'zset' then return 2 end\n" +
	"return 3"

// KeyKindOp reads into Result.Holders what key is (the KeyKind
// constants). It changes nothing.
func KeyKindOp(key string) Op {
	return primitiveOp(&primitiveCall{name: "key-kind", kind: primCount, script: KeyKindScript,
		sha: ScriptSHA(KeyKindScript), keys: []string{key}})
}

// SemaphoreLimitScript reads a semaphore's stored limit (KEYS[1] = its
// holders set): 0 when none is stored (no live permit).
const SemaphoreLimitScript = "local s = redis.call('zscore', KEYS[1], '')\n" +
	"if s then return -tonumber(s) end\n" +
	"return 0"

// LimitOp reads the semaphore's stored limit into Result.Holders (0: none
// stored). It changes nothing.
func (s Semaphore) LimitOp() Op {
	return primitiveOp(&primitiveCall{name: "semaphore-limit", kind: primCount, script: SemaphoreLimitScript,
		sha: ScriptSHA(SemaphoreLimitScript), keys: []string{s.HoldersKey}})
}

// HoldersNextEndScript reads how long until the first live holder's lease
// of a holders set ends (KEYS[1]), in ms by server time: 0 when none is
// live.
const HoldersNextEndScript = serverNow +
	"local first = redis.call('zrangebyscore', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)\n" +
	"if #first == 0 then return 0 end\n" +
	"return tonumber(first[2]) - now"

// NextEndOp reads into Result.Holders how many ms are left until the
// first live holder's lease of holdersKey ends (0: none is live).
func NextEndOp(holdersKey string) Op {
	return primitiveOp(&primitiveCall{name: "holders-next-end", kind: primCount, script: HoldersNextEndScript,
		sha: ScriptSHA(HoldersNextEndScript), keys: []string{holdersKey}})
}
