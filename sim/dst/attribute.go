package dst

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/respire-go/respire/conn"
)

// This file maps what the engine writes to the lock operations the driver
// started, for the checker. The engine tells the simulator when it starts
// and ends each operation (conn.Observer.Op, whose ctx the operation is
// sent under) and which command it hands to a connection on whose behalf
// (conn.Observer.Command, with that ctx). Every command a simulated
// connection writes is attributed to the operation of its process it
// belongs to:
//
//   - the operation whose ctx it travels under (a renewal batch's ctx
//     carries all its renewals), when the engine passed the ctx down;
//   - else (a drainer — a non-pipelined connection's, or a per-caller
//     writer's session's — writes its callers' commands under a ctx of its
//     own) the oldest hand-off not written yet
//     to this connection of the same command, owner token, key and family
//     (a compare-and-pexpire and its script fallbacks are one family, so
//     are the release ladder's steps). A hand-off names the connection it
//     was handed to, and is written there or nowhere: two owner reads
//     (GET, no token) handed to two connections, one of them refused by a
//     retired link and retried on a fresh session, are never swapped;
//   - else (a renewal batch, which is not reported as hand-offs, written
//     by a drainer) the oldest open operation of that family, token and
//     key that may write now: one that wrote nothing yet, or whose last
//     command got a confirming reply; else one that ended uncertain so
//     (see below), on the connection it last wrote on.
//
// A command that belongs to no operation (identity, fences, tracking, the
// watchers' reads, PING, CLUSTER SLOTS) is attributed to none.
//
// A command handed off may be written after its operation ended: the
// engine told the driver "uncertain" because the command was in a
// connection's hands, not written yet (a drainer writes a batch its
// callers stopped waiting for; a write waits for in-flight capacity). That
// is no replay — the command is the one the driver was told may run, and
// the driver fences its session — so such a write is attributed to its
// operation as late. Any other lock write that belongs to no open
// operation breaks invariant 3.

// opKey is the ctx key of the operations a command is sent for.
type opKey struct{}

// opsOf returns the operations ctx was started for (innermost last).
func opsOf(ctx context.Context) []*opRun {
	ops, _ := ctx.Value(opKey{}).([]*opRun)
	return ops
}

// opStarted is the engine's Op hook for process p: it records op and
// returns the ctx to send it under (carrying op, and the operations the
// ctx carried already: a renewal batch threads its renewals' ctx) and the
// function told its end.
func (p *process) opStarted(ctx context.Context, op conn.Op) (context.Context, func(error)) {
	w := p.w
	rec := w.newOp(p, op, "")
	first := firstCommand(op)
	rec.token, rec.family = tokenOf(first), family(first)
	p.open = append(p.open, rec)
	return context.WithValue(ctx, opKey{}, append(slices.Clip(opsOf(ctx)), rec)), func(err error) {
		if i := slices.Index(p.open, rec); i >= 0 {
			p.open = slices.Delete(p.open, i, i+1)
		}
		w.opEnded(rec, err)
		switch {
		case !rec.uncertain: // an unwritten hand-off of it will never be written
			p.handOffs = slices.DeleteFunc(p.handOffs, func(h handOff) bool { return h.op == rec })
		case rec.reported == 0 && (rec.sent == 0 || rec.replied && rec.confirmed):
			p.late = append(p.late, rec) // a batch's renewal: it may still be in a drainer's hands
		}
	}
}

// handOff is a command the engine handed to a connection for an
// operation (conn.Observer.Command), not written yet.
type handOff struct {
	op   *opRun
	name string
	to   *connection // the connection it was handed to (nil: not a simulated one)
}

// handedOff is the engine's Command hook for process p: name is handed to
// c.
func (p *process) handedOff(ctx context.Context, c conn.Conn, name string) {
	ops := opsOf(ctx)
	switch name {
	case "SET", "GET", "DELEX", "DELIFEQ", "EVAL", "EVALSHA":
	default:
		return
	}
	if s, ok := c.(*simConn); ok && len(ops) > 0 {
		s.lockHandedOff() // an operation's command (a watcher's reads carry none)
	}
	if len(ops) > 0 {
		// An operation hands off one step at a time: an older hand-off of
		// it not written yet never will be (its link refused it, not
		// submitted, and the engine goes on on a fresh session).
		rec := ops[len(ops)-1]
		rec.reported++
		p.handOffs = slices.DeleteFunc(p.handOffs, func(h handOff) bool { return h.op == rec })
		h := handOff{op: rec, name: name}
		if s, ok := c.(*simConn); ok {
			h.to = s.c
		}
		p.handOffs = append(p.handOffs, h)
	}
}

// firstCommand is the first command op sends on a session that knows
// nothing of its server yet.
func firstCommand(op conn.Op) conn.Command {
	o, fenced, script := op.Machine(0)
	switch {
	case o != nil:
		return o.Command()
	case fenced != nil:
		return fenced.Command()
	}
	return script.Command()
}

// attribute returns the operation of p that cmd, written on c under ctx,
// belongs to (nil for none), and late when that operation ended before
// the write; tracked says cmd follows CLIENT CACHING YES, a watcher's
// read.
func (p *process) attribute(ctx context.Context, cmd conn.Command, tracked bool, c *connection) (op *opRun, late bool) {
	fam := family(cmd)
	if fam == "" || tracked {
		return nil, false
	}
	token, key, name := tokenOf(cmd), routingKey(cmd.Args), strings.ToUpper(cmd.Args[0])
	for _, rec := range opsOf(ctx) {
		if rec.proc == p && !rec.ended && rec.belongs(fam, token, key) {
			p.consumeHandOff(rec, name)
			return rec, false
		}
	}
	for i, h := range p.handOffs {
		if h.to == c && h.name == name && h.op.belongs(fam, token, key) {
			p.handOffs = slices.Delete(p.handOffs, i, i+1)
			return h.op, h.op.ended
		}
	}
	var answered *opRun
	for _, rec := range p.open {
		switch {
		case !rec.belongs(fam, token, key):
		case rec.sent == 0:
			return rec, false
		case rec.replied && rec.confirmed && answered == nil:
			answered = rec
		}
	}
	if answered != nil {
		return answered, false
	}
	for i, rec := range p.late {
		if rec.belongs(fam, token, key) && (rec.sent == 0 || rec.last == c) {
			p.late = slices.Delete(p.late, i, i+1)
			return rec, true
		}
	}
	if isLockWrite(fam) {
		p.w.check.fail(p.w, 3, "%s of %s on %s written outside every operation the driver started",
			cmd.Args[0], tokenName(token), key)
	}
	return nil, false
}

// consumeHandOff drops rec's oldest hand-off of a command named name: it
// is being written.
func (p *process) consumeHandOff(rec *opRun, name string) {
	for i, h := range p.handOffs {
		if h.op == rec && h.name == name {
			p.handOffs = slices.Delete(p.handOffs, i, i+1)
			return
		}
	}
}

// belongs reports whether a command of family fam, token and key is one
// of op's.
func (op *opRun) belongs(fam, token, key string) bool {
	return op.family == fam && op.token == token && op.key == key
}

// family names the operation kind a command is a step of: "acquire" (SET
// NX), "extend" (SET IFEQ and the extension script), "release" (DELEX,
// DELIFEQ and the release script), "read" (GET), "script:<sha1>" for any
// other script (the fenced acquisition, the primitives'); "" for commands
// that are no lock operation's.
func family(cmd conn.Command) string {
	a := cmd.Args
	if len(a) < 2 {
		return ""
	}
	switch strings.ToUpper(a[0]) {
	case "SET":
		for _, arg := range a[3:] {
			switch strings.ToUpper(arg) {
			case "NX":
				return "acquire"
			case "IFEQ":
				return "extend"
			}
		}
	case "DELEX", "DELIFEQ":
		return "release"
	case "GET":
		return "read"
	case "EVALSHA":
		return scriptFamily(strings.ToLower(a[1]))
	case "EVAL":
		sum := sha1.Sum([]byte(a[1]))
		return scriptFamily(hex.EncodeToString(sum[:]))
	}
	return ""
}

func scriptFamily(sha string) string {
	switch sha {
	case conn.ExtendScriptSHA:
		return "extend"
	case conn.ReleaseScriptSHA:
		return "release"
	}
	return "script:" + sha
}

// isLockWrite reports whether a family always writes a lock key.
func isLockWrite(fam string) bool {
	switch fam {
	case "acquire", "extend", "release", "script:" + conn.FencedAcquireScriptSHA:
		return true
	}
	return false
}

// routingKey is the key a server routes a command by, read from the
// command as a server reads it ("" for keyless commands): a script's
// first key, otherwise the first argument of the keyed commands the lock
// sends.
func routingKey(args []string) string {
	if len(args) < 2 {
		return ""
	}
	switch strings.ToUpper(args[0]) {
	case "EVAL", "EVALSHA":
		if len(args) > 3 && args[2] != "0" {
			return args[3]
		}
		return ""
	case "SET", "GET", "DEL", "DELEX", "DELIFEQ", "PEXPIRE", "PTTL", "EXISTS", "ZSCORE", "ZADD", "ZREM", "ZCARD",
		"ZCOUNT", "INCR":
		return args[1]
	}
	return ""
}
