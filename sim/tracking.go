package sim

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Client-side caching as in Redis' tracking.c (identical in the four
// profiles): a global table from keys to the clients that read them
// (default, OPTIN and OPTOUT modes; one-shot: a key is forgotten once
// invalidated), and BCAST prefixes whose changed keys are sent at the end
// of each event-loop iteration.

// tracking is one connection's CLIENT TRACKING state.
type tracking struct {
	on, bcast, optin, optout, noloop bool
	caching                          bool     // CLIENT CACHING YES/NO given for the next command
	broken                           bool     // the REDIRECT target went away
	redirect                         int64    // REDIRECT client id; 0 none
	prefixes                         []string // BCAST prefixes, sorted
}

// bcastState is one BCAST prefix: who listens, which keys changed since
// the last flush and who changed each last (0: an expiry or a script).
type bcastState struct {
	clients map[int64]bool
	keys    map[string]int64
}

// pendingInvalidation is an invalidation for the client whose command is
// running: real servers send it after the command's reply.
type pendingInvalidation struct {
	key  string
	null bool // FLUSHALL/FLUSHDB: every key
}

// afterCommand clears CLIENT CACHING's flag after each command, as
// resetClient does, except after a CLIENT subcommand or inside MULTI.
func (e *Engine) afterCommand(c *client, args []string) {
	if c.trk.caching && !c.inMulti && !e.isClientSubcommand(args) {
		c.trk.caching = false
	}
}

func (e *Engine) isClientSubcommand(args []string) bool {
	if len(args) < 2 || !strings.EqualFold(args[0], "client") {
		return false
	}
	sub := strings.ToLower(args[1])
	_, ok := clientSubArity[sub]
	return ok && (sub != "setinfo" || e.spec.clientSetInfo)
}

// rememberKeys records the keys of a read command for the running
// client (trackingRememberKeys). In a script or a transaction the client
// is the caller.
func (e *Engine) rememberKeys(cmd *command, args []string) {
	t := e.cur
	if t == nil || !t.trk.on || t.trk.bcast || cmd.keys == nil ||
		(t.trk.optin && !t.trk.caching) || (t.trk.optout && t.trk.caching) {
		return
	}
	if e.trackTable == nil {
		e.trackTable = map[string]map[int64]bool{}
	}
	for _, k := range cmd.keys(args) {
		ids := e.trackTable[k]
		if ids == nil {
			ids = map[int64]bool{}
			e.trackTable[k] = ids
		}
		ids[t.id] = true
	}
}

// modifier is who changes keys for BCAST's NOLOOP: the client, except
// inside a script, whose writes real servers attribute to the script's
// own client.
func (e *Engine) modifier(c *client) int64 {
	if e.vm != nil && e.vm.run != nil {
		return 0
	}
	return c.id
}

// keyModified is trackingInvalidateKey: key changed (by is the modifier
// for BCAST NOLOOP, 0 for an expiry or a script). Every client that read
// it is told once and forgotten; NOLOOP skips the running client's own
// changes; the running client's own invalidations wait for its reply.
func (e *Engine) keyModified(key string, by int64) {
	if len(e.bcast) > 0 {
		for p, bs := range e.bcast {
			if strings.HasPrefix(key, p) {
				if bs.keys == nil {
					bs.keys = map[string]int64{}
				}
				bs.keys[key], e.bcastDirty = by, true
			}
		}
	}
	ids := e.trackTable[key]
	if ids == nil {
		return
	}
	delete(e.trackTable, key)
	for _, id := range sortedIDs(ids) {
		t := e.clients[id]
		switch {
		case t == nil || !t.trk.on || t.trk.bcast:
		case t == e.cur && t.trk.noloop:
		case t == e.cur:
			e.pending = append(e.pending, pendingInvalidation{key: key})
		default:
			e.sendTracking(t, keyList(key))
		}
	}
}

// invalidateAll is trackingInvalidateKeysOnFlush (FLUSHALL, FLUSHDB):
// every tracking client, BCAST and NOLOOP ones included, gets a null.
func (e *Engine) invalidateAll() {
	if e.trackers > 0 {
		for _, id := range sortedIDs(e.clients) {
			switch c := e.clients[id]; {
			case !c.trk.on:
			case c == e.cur:
				e.pending = append(e.pending, pendingInvalidation{null: true})
			default:
				e.sendTracking(c, nullValue(c))
			}
		}
	}
	e.trackTable = nil
}

// sendPending sends the running client's own invalidations after its
// reply (trackingHandlePendingKeyInvalidations).
func (e *Engine) sendPending(c *client) {
	if len(e.pending) == 0 {
		return
	}
	pending := e.pending
	e.pending = nil
	if e.clients[c.id] != c {
		return // killed by its own command
	}
	for _, p := range pending {
		v := keyList(p.key)
		if p.null {
			v = nullValue(c)
		}
		e.sendTracking(c, v)
	}
}

// flushBroadcast is trackingBroadcastInvalidationMessages: per prefix (in
// byte order) one message listing its changed keys (sorted) to each
// listener, without the keys a NOLOOP listener changed last itself.
func (e *Engine) flushBroadcast() {
	if !e.bcastDirty {
		return
	}
	e.bcastDirty = false
	for _, p := range slices.Sorted(maps.Keys(e.bcast)) {
		bs := e.bcast[p]
		if len(bs.keys) == 0 {
			continue
		}
		keys := slices.Sorted(maps.Keys(bs.keys))
		for _, id := range sortedIDs(bs.clients) {
			c := e.clients[id]
			if c == nil {
				continue
			}
			skip := int64(-1)
			if c.trk.noloop {
				skip = id
			}
			if v := broadcastList(keys, bs.keys, skip); v != nil {
				e.sendTracking(c, v)
			}
		}
		bs.keys = nil
	}
}

// sendTracking is sendTrackingMessage: value (a RESP array of keys or a
// null) goes to the client as a RESP3 push, or through its REDIRECT: a
// push to a RESP3 target, a __redis__:invalidate message to a subscribed
// RESP2 target. A RESP2 client without REDIRECT gets nothing.
func (e *Engine) sendTracking(c *client, value []byte) {
	target, redirected := c, false
	if c.trk.redirect != 0 {
		r := e.clients[c.trk.redirect]
		if r == nil {
			c.trk.broken = true
			if c.proto == 3 {
				e.push(c, []byte(">2\r\n$21\r\ntracking-redir-broken\r\n:"+strconv.FormatInt(c.trk.redirect, 10)+"\r\n"))
			}
			return
		}
		target, redirected = r, true
	}
	var head string
	switch {
	case target.proto == 3:
		head = ">2\r\n$10\r\ninvalidate\r\n"
	case redirected && len(target.channels) > 0:
		head = "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
	default:
		return
	}
	e.push(target, append([]byte(head), value...))
}

func keyList(key string) []byte {
	return appendBulk([]byte("*1\r\n"), '$', key)
}

// nullValue is "every key" in the tracking client's own protocol (even
// when redirected to a client of the other protocol).
func nullValue(c *client) []byte {
	return null().encode(nil, c.proto)
}

// broadcastList is trackingBuildBroadcastReply: nil when every key was
// last changed by skip.
func broadcastList(keys []string, by map[string]int64, skip int64) []byte {
	n := 0
	for _, k := range keys {
		if by[k] != skip {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	b := append([]byte{'*'}, strconv.Itoa(n)...)
	b = append(b, '\r', '\n')
	for _, k := range keys {
		if by[k] != skip {
			b = appendBulk(b, '$', k)
		}
	}
	return b
}

func sortedIDs[V any](m map[int64]V) []int64 {
	if len(m) == 1 {
		for id := range m {
			return []int64{id}
		}
	}
	return slices.Sorted(maps.Keys(m))
}
