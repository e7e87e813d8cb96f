package dst

import (
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
)

// The checker's half for the primitives workload (prims.go): the servers'
// sorted sets, read as an administrator after every script of a member
// (its token's score), and the drivers' beliefs after every step.
// Invariants: (10) never more permits of a semaphore believed live — held,
// less the drift bound, on the true clock — than its limit, nor more live
// members on the server; (11) never a write hold believed live together
// with a read hold or another write hold, nor on the server a writer
// together with a live reader; (12) in fault-free liveness schedules a
// waiting writer gets in within its budget while the readers churn, and no
// reader is admitted while a writer waits with its marker set
// (primwait.go); (13) a
// permit acquisition is refused only while at least limit permits are
// live on the server (an ended lease — a crashed holder's — frees its
// permit at its lease end, never later). Invariants 1, 4 and 8 judge
// members too: a handle that believes it holds a permit or a read hold is
// a live member; its keep-alive and context end by the member's lease end;
// a member told released (an ordered release answered) never lives again.

// memberBook is what the checker knows of the sorted sets' members.
type memberBook struct {
	end     map[string]int64    // owner token -> its score (server ms its lease ends), 0 when no member
	holders map[string][]string // holders key -> tokens that may be live members
	listed  map[string]bool     // token -> in holders
}

func newMemberBook() memberBook {
	return memberBook{end: map[string]int64{}, holders: map[string][]string{}, listed: map[string]bool{}}
}

// live reports whether token is a live member now (score after the
// server's time in ms, as the scripts judge).
func (b *memberBook) live(w *world, token string) bool { return b.end[token] > w.Now().UnixMilli() }

// count returns the live members of key now, forgetting the others (only
// a script of its own token can make one live again, which re-reads it).
func (b *memberBook) count(w *world, key string) int {
	kept := b.holders[key][:0]
	for _, t := range b.holders[key] {
		if b.live(w, t) {
			kept = append(kept, t)
		} else {
			b.listed[t] = false
		}
	}
	clear(b.holders[key][len(kept):])
	b.holders[key] = kept
	return len(kept)
}

// read re-reads token's score in key on n.
func (b *memberBook) read(w *world, n *node, key, token string) int64 {
	r := parseReply([]byte(n.engine.AdminExec("ZSCORE", key, token)))
	var score int64
	if r.Kind == conn.ReplyBulk {
		f, _ := strconv.ParseFloat(r.Text, 64)
		score = int64(f)
	}
	b.end[token] = score
	if score > 0 && !b.listed[token] {
		b.listed[token] = true
		b.holders[key] = append(b.holders[key], token)
	}
	return score
}

// afterMemberExec: after a command of a member's script or a writer's
// acquisition ran on c's node, re-read the member and check the servers'
// side of invariants 8, 10, 11 and 13.
func (k *checker) afterMemberExec(w *world, c *connection, r *request, reply conn.Reply) {
	op := r.op
	if op == nil || op.token == "" || reply.Kind == conn.ReplyError {
		return
	}
	k.trackMarker(w, op, reply)
	if op.name == "write-acquire" {
		if reply.Int == 2 {
			w.stats.WriterWaits++
		}
		if p := w.primitiveOf(op.key); p != nil && reply.Int == 1 {
			k.checkServerRW(w, p)
		}
		return
	}
	key := op.memberKey()
	if key == "" {
		return
	}
	if score := k.members.read(w, c.node, key, op.token); score > 0 {
		k.expiry[op.token] = time.UnixMilli(score).Sub(epoch)
	}
	if k.members.live(w, op.token) && k.cleaned[op.token] != "" {
		k.fail(w, 8, "%s is a live member of %s again after its ordered release answered", tokenName(op.token), key)
		return
	}
	p := w.primitiveOf(key)
	switch {
	case p == nil || reply.Kind != conn.ReplyInt:
	case op.name == "semaphore-acquire" && reply.Int == 0: // (a fair waiter's reservation counts as live: faircheck.go)
		w.stats.FullRefusals++
		if n := k.members.count(w, key) + reservations(w, c.node, key); n < p.sem.Limit {
			k.fail(w, 13, "%s refused a permit of %s with %d live on the server, limit %d: an ended lease still counted",
				op.name, key, n, p.sem.Limit)
		}
	case op.name == "semaphore-acquire":
		if n := k.members.count(w, key); n > p.sem.Limit {
			k.fail(w, 10, "%s holds %d live permits on the server after %s of %s, limit %d",
				key, n, op.name, tokenName(op.token), p.sem.Limit)
		}
	case op.name == "read-acquire" && reply.Int == 1:
		k.checkServerRW(w, p)
		if w.opt.Liveness {
			k.checkAdmission(w, op)
		}
	}
}

// checkServerRW: invariant 11 on the server — a writer in the writer key
// (not a waiting marker) and a live reader never together.
func (k *checker) checkServerRW(w *world, p *primitive) {
	writer := w.keyState(p.rw.WriterKey)
	if !writer.found || conn.IsWaitingMarker(writer.token) {
		return
	}
	if n := k.members.count(w, p.rw.ReadersKey); n > 0 {
		k.fail(w, 11, "writer %s holds %s on the server while %d reader(s) are live members of %s",
			tokenName(writer.token), p.rw.WriterKey, n, p.rw.ReadersKey)
	}
}

// believes reports whether h's driver believes it holds its lease now, its
// deadline taken the drift bound early (as invariant 1 judges it).
func (w *world) believes(h *handle) bool {
	deadline, held := h.lock.LeaseDeadline()
	return held && h.proc.local(w.now) < deadline-w.driftMargin(h.proc)
}

// checkPrimitives checks the drivers' beliefs about the primitives
// (invariants 10 and 11) and the writer keys' clean releases (invariant 8).
func (k *checker) checkPrimitives(w *world) {
	for _, p := range w.prims {
		if !p.isRW {
			continue
		}
		if o := w.keyState(p.rw.WriterKey); o.found && k.cleaned[o.token] == p.rw.WriterKey {
			k.fail(w, 8, "%s holds %s, whose ordered release answered", p.rw.WriterKey, tokenName(o.token))
			return
		}
	}
	var permits, reads, writes []*handle
	for _, h := range w.live {
		if h.prim == nil || h.lock == nil || !w.believes(h) {
			continue
		}
		switch h.spec.Kind {
		case actor.KindPermit:
			permits = append(permits, h)
		case actor.KindRead:
			reads = append(reads, h)
		case actor.KindWrite:
			writes = append(writes, h)
		}
	}
	if len(w.prims) > 0 && len(permits) > w.prims[0].sem.Limit {
		k.fail(w, 10, "%d permits of %s believed live at once, limit %d: %s",
			len(permits), w.prims[0].sem.HoldersKey, w.prims[0].sem.Limit, handleNames(permits))
		return
	}
	if len(writes) > 1 || len(writes) == 1 && len(reads) > 0 {
		k.fail(w, 11, "write hold(s) %s believed live together with read hold(s) %s", handleNames(writes), handleNames(reads))
	}
}

// handleNames lists handles with their tokens, for messages.
func handleNames(hs []*handle) string {
	names := make([]string, 0, len(hs))
	for _, h := range hs {
		names = append(names, h.name+" "+tokenName(h.token)+" ("+h.lock.State().String()+")")
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
