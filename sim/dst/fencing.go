package dst

import (
	"strconv"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// Fencing-token locks (coordination/) in the simulation: a fenced handle
// acquires through conn's fenced script (conn.FencedAcquire: EVALSHA, EVAL
// after NOSCRIPT) instead of SET NX PX, with the key's persistent counter
// "{key}:fence" (same slot); renewal, verification and release are the
// ordinary ladders, as for coordination's locks, which are lease's managed
// handles with this script as their acquisition command.
// Invariant 6 checks the tokens the processes accept.

// counterKey is the fencing counter of a lock key (one hash slot with it).
func counterKey(key string) string { return "{" + key + "}:fence" }

// nodeKeys is every key a node holds for the workload: the lock keys,
// their fencing counters and the keys of their guarded writes (copied by
// failover).
func (w *world) nodeKeys() []string {
	keys := append([]string(nil), w.keys...)
	for _, k := range w.keys {
		keys = append(keys, counterKey(k))
		keys = append(keys, guardKeys(k)...)
	}
	return keys
}

// shouldFence decides whether a new handle is a fenced lock.
func (w *world) shouldFence() bool { return w.chance(w.opt.FencedPercent) }

// afterScriptExec numbers every fenced script run that handed out a token
// (the server's order of hand-out, across failovers and slot moves).
func (w *world) afterScriptExec(r *request, reply conn.Reply) {
	if !isFencedCommand(r.cmd) || reply.Kind != conn.ReplyBulk {
		return
	}
	w.scriptRuns++
	r.scriptRun = w.scriptRuns
	if r.op != nil {
		r.op.scriptRun = w.scriptRuns
	}
	w.stats.FencingTokens++
}

// migratingMultiKey applies the cluster's multi-key rules to a fenced
// script (two keys, one slot) while its slot migrates: on the source, both
// keys present → run, none → ASK, one → TRYAGAIN; on the target after
// ASKING, both present → run, otherwise TRYAGAIN. redirected is false when
// the command runs or is not a fenced script (the single-key rules apply).
func (n *node) migratingMultiKey(w *world, cmd conn.Command, owner *node, m *migration, asking bool) (conn.Reply, bool) {
	if m == nil {
		return conn.Reply{}, false
	}
	present, total := n.scriptKeysPresent(w, cmd)
	switch {
	case total < 2:
		return conn.Reply{}, false
	case owner == n && m.to != n && present == 0:
		return conn.Reply{Kind: conn.ReplyError, Text: "ASK " + strconv.Itoa(sim.Slot(cmd.Args[3])) + " " + m.to.addr}, true
	case owner == n && m.to != n && present < total, m.to == n && asking && present < total:
		return tryAgain(), true
	}
	return conn.Reply{}, false
}

// scriptKeysPresent counts how many of a multi-key script's distinct keys
// (a fenced acquisition's two, a guarded write's) node n holds, for the
// cluster's multi-key rules during a migration; total is 0 for other
// commands.
func (n *node) scriptKeysPresent(w *world, cmd conn.Command) (present, total int) {
	if !isMultiKeyScript(cmd) {
		return 0, 0
	}
	keys, _ := strconv.Atoi(cmd.Args[2])
	seen := map[string]bool{}
	for _, k := range cmd.Args[3 : 3+keys] {
		if seen[k] {
			continue
		}
		seen[k] = true
		total++
		if k == cmd.Args[3] && n.state(w, k).found ||
			k != cmd.Args[3] && parseReply([]byte(n.engine.AdminExec("EXISTS", k))).Int == 1 {
			present++
		}
	}
	return present, total
}

// isMultiKeyScript reports a script of two keys or more, routed by its
// first (a fenced acquisition, a guarded write).
func isMultiKeyScript(cmd conn.Command) bool {
	if (cmd.Args[0] != "EVALSHA" && cmd.Args[0] != "EVAL") || len(cmd.Args) < 5 {
		return false
	}
	keys, err := strconv.Atoi(cmd.Args[2])
	return err == nil && keys >= 2 && 3+keys <= len(cmd.Args)
}

// isFencedCommand reports whether cmd runs the fenced acquisition script
// (EVALSHA or EVAL; its keys are the lease key and the counter).
func isFencedCommand(cmd conn.Command) bool {
	return len(cmd.Args) > 5 && family(cmd) == "script:"+conn.FencedAcquireScriptSHA
}

// tryAgain is the cluster's answer to a multi-key command whose keys are
// split by a slot migration: it did not run.
func tryAgain() conn.Reply {
	return conn.Reply{Kind: conn.ReplyError, Text: "TRYAGAIN Multiple keys request during rehashing of slot"}
}

// handout is one fencing token a process accepted.
type handout struct {
	run    int64 // the script run that handed it out (server order)
	token  int64
	handle string
}

// onFencingToken checks invariant 6 when the driver returns a fenced lock
// of handle h with token: per counter, the tokens processes accept
// increase strictly in the order the server handed them out. Failover
// copies the keyspace (a fully replicated replica) and slot moves copy the
// counter, so there is no modelled rollback to exempt.
func (k *checker) onFencingToken(w *world, h *handle, run, token int64) {
	counter := counterKey(h.key)
	got := handout{run: run, token: token, handle: h.name}
	for _, prev := range k.handouts[counter] {
		earlier, later := prev.run < got.run && prev.token >= got.token, prev.run > got.run && prev.token <= got.token
		if earlier || later {
			k.fail(w, 6, "%s accepted fencing token %d of %s from script run #%d, but %s accepted %d from run #%d",
				got.handle, got.token, counter, got.run, prev.handle, prev.token, prev.run)
			return
		}
	}
	if k.handouts == nil {
		k.handouts = map[string][]handout{}
	}
	k.handouts[counter] = append(k.handouts[counter], got)
}

// copyCounter copies key's fencing counter and the keys of its guarded
// writes from one node to another (slot move), with their TTLs, deleting
// them at the source.
func copyCounter(from, to *node, key string) {
	for _, k := range append([]string{counterKey(key)}, guardKeys(key)...) {
		v, found, pttl := from.owner(k)
		switch {
		case !found:
			continue
		case pttl >= 0:
			to.engine.AdminExec("SET", k, v, "PX", strconv.FormatInt(max(pttl, 1), 10))
		default:
			to.engine.AdminExec("SET", k, v)
		}
		from.engine.AdminExec("DEL", k)
	}
}
