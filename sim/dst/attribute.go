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
// started, for the checker: the engine tells the simulator when it starts
// and ends each operation (conn.Observer.Op), and every command a
// simulated connection carries is attributed to the open operation of its
// process it belongs to — the one whose ctx the command travels under when
// the engine passed it down, else the oldest open operation with the
// command's owner token, key and family (a compare-and-pexpire and its
// script fallbacks are one family, so are the release ladder's steps). A
// command that belongs to no operation (identity, fences, tracking, the
// watchers' reads, PING, CLUSTER SLOTS) is attributed to none; a lock
// write that belongs to none is a violation of invariant 3.

// opKey is the ctx key of the operation a command is sent for.
type opKey struct{}

// opStarted is the engine's Op hook for process p: it records op and
// returns the ctx to send it under and the function told its end.
func (p *process) opStarted(ctx context.Context, op conn.Op) (context.Context, func(error)) {
	w := p.w
	rec := w.newOp(p, op, "")
	first := firstCommand(op)
	rec.token, rec.family = tokenOf(first), family(first)
	p.open = append(p.open, rec)
	return context.WithValue(ctx, opKey{}, rec), func(err error) {
		if i := slices.Index(p.open, rec); i >= 0 {
			p.open = slices.Delete(p.open, i, i+1)
		}
		w.opEnded(rec, err)
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

// attribute returns the open operation of p that cmd belongs to (nil for
// none); tracked says cmd follows CLIENT CACHING YES, a watcher's read.
func (p *process) attribute(ctx context.Context, cmd conn.Command, tracked bool) *opRun {
	fam := family(cmd)
	if fam == "" || tracked {
		return nil
	}
	token, key := tokenOf(cmd), routingKey(cmd.Args)
	if rec, ok := ctx.Value(opKey{}).(*opRun); ok && rec.proc == p && rec.belongs(fam, token, key) {
		return rec
	}
	for _, rec := range p.open {
		if rec.belongs(fam, token, key) {
			return rec
		}
	}
	if isLockWrite(fam) {
		p.w.check.fail(p.w, 3, "%s of %s on %s written outside every operation the driver started",
			cmd.Args[0], tokenName(token), key)
	}
	return nil
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
