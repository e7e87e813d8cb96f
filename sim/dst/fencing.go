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

// nodeKeys is every key a node holds for the workload: the lock keys and
// their fencing counters (copied by failover).
func (w *world) nodeKeys() []string {
	keys := append([]string(nil), w.keys...)
	for _, k := range w.keys {
		keys = append(keys, counterKey(k))
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
	present, multi := n.fencedKeysPresent(w, cmd)
	switch {
	case !multi:
		return conn.Reply{}, false
	case owner == n && m.to != n && present == 0:
		return conn.Reply{Kind: conn.ReplyError, Text: "ASK " + strconv.Itoa(sim.Slot(cmd.Args[3])) + " " + m.to.addr}, true
	case owner == n && m.to != n && present == 1, m.to == n && asking && present < 2:
		return tryAgain(), true
	}
	return conn.Reply{}, false
}

// fencedKeysPresent counts how many of a fenced command's two keys node n
// holds (for the cluster's multi-key rules during a migration); ok is false
// for other commands.
func (n *node) fencedKeysPresent(w *world, cmd conn.Command) (present int, ok bool) {
	if !isFencedCommand(cmd) {
		return 0, false
	}
	if n.state(w, cmd.Args[3]).found {
		present++
	}
	if parseReply([]byte(n.engine.AdminExec("EXISTS", cmd.Args[4]))).Int == 1 {
		present++
	}
	return present, true
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

// copyCounter copies key's fencing counter from one node to another (slot
// move), deleting it at the source.
func copyCounter(from, to *node, key string) {
	counter := counterKey(key)
	r := parseReply([]byte(from.engine.AdminExec("GET", counter)))
	if r.Kind != conn.ReplyBulk {
		return
	}
	to.engine.AdminExec("SET", counter, r.Text)
	from.engine.AdminExec("DEL", counter)
}
