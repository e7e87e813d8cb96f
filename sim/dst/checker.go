package dst

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/respire-go/respire/conn"
)

// Violation is one broken invariant.
type Violation struct {
	Invariant int           // 0-8, as numbered in the package's invariants list
	At        time.Duration // virtual time
	Message   string
}

// String renders the violation with its virtual time.
func (v Violation) String() string {
	return fmt.Sprintf("invariant %d at %.3fms: %s", v.Invariant, float64(v.At)/1e6, v.Message)
}

// checker holds the invariants. It watches the wire (onSend/onReply), the
// server (before/afterExec, read as an administrator) and every handle's
// belief after each step:
//
//  1. a handle that believes it holds a key (its local estimate, less the
//     drift bound) is the server's owner of that key;
//  2. a command of a handle that is not the owner neither extends nor
//     deletes the key (nor creates it);
//  3. no uncertain write is replayed, and a fallback command follows only
//     the exact confirming reply to the previous one;
//  4. a live keep-alive context is cancelled before the server-side lease
//     can have expired (drift bound allowed);
//  5. a fenced session executes nothing after its CLIENT KILL reply;
//  6. per fencing counter, the tokens processes accept increase strictly in
//     the order the server handed them out (fencing.go; there is no modelled
//     rollback: failover and slot moves copy the counter);
//  7. without faults, every waiting acquirer acquires within its budget.
type checker struct {
	violations []Violation
	expiry     map[string]time.Duration // token -> true time its server lease ends (last seen)
	owners     []keyState               // scratch: each key's owner this step
	fenced     map[fenceKey]bool
	handouts   map[string][]handout // counter -> tokens accepted (invariant 6)
	cleaned    map[string]string    // token of an abandoned acquisition -> key, once its ordered clean-up answered (invariant 8)
}

type fenceKey struct {
	node       int
	generation int
	clientID   int64
}

type keyState struct {
	token string
	found bool
	pttl  int64
}

func (k *checker) fail(w *world, invariant int, format string, args ...any) {
	v := Violation{Invariant: invariant, At: w.now, Message: fmt.Sprintf(format, args...)}
	k.violations = append(k.violations, v)
	w.trace.logf(w, nil, "", "VIOLATION %s", v)
	w.done = true
}

// onSend: invariant 3 on the client side of the wire.
func (k *checker) onSend(w *world, r *request) {
	op := r.op
	if op == nil {
		return
	}
	h := op.h
	name := r.cmd.Args[0]
	switch {
	case op.uncertain:
		k.fail(w, 3, "%s replayed %s after its outcome became uncertain", h.name, name)
	case op.sent > 0 && !(op.replied && op.confirmed):
		k.fail(w, 3, "%s sent fallback %s without a confirming reply to the previous command", h.name, name)
	case op.kind != OpVerify && k.unsealed(op.mustSeal) != nil:
		k.fail(w, 3, "%s sent %s while its uncertain write on connection id=%d may still run (not fenced)",
			h.name, op.kind, k.unsealed(op.mustSeal).clientID)
	case op.afterUncertainSet && (op.kind == OpAcquire || op.kind == OpExtend):
		k.fail(w, 3, "%s sent %s after its acquisition was uncertain", h.name, op.kind)
	}
}

func (k *checker) onReply(*world, *request, conn.Reply) {}

func (k *checker) onUncertain(_ *world, op *opRun) {
	switch op.kind {
	case OpExtend, OpRelease:
		if op.wrote != nil {
			op.h.uncertainWrites = append(op.h.uncertainWrites, op.wrote)
		}
	case OpAcquire:
		op.h.uncertainSet = true
	}
}

// unsealed returns one of conns (connections that carried an uncertain
// write of a handle) that may still run it: neither fenced (its CLIENT KILL
// answered) nor closed on the server. A new write of the handle before that
// would race the old one (invariant 3); after it, nothing of the old write
// can run any more.
func (k *checker) unsealed(conns []*connection) *connection {
	for _, c := range conns {
		serverClosed := c.closed || c.generation != c.node.generation
		if !serverClosed && !k.fenced[fenceKey{c.node.index, c.generation, c.clientID}] {
			return c
		}
	}
	return nil
}

// confirming is the checker's own table of fallback-confirming replies
// (docs/compatibility.md, "Exact fallback triggers"), independent of conn's.
func (k *checker) confirming(cmd conn.Command, r conn.Reply) bool {
	if r.Kind != conn.ReplyError {
		return false
	}
	if _, redirect := conn.ParseRedirect(r.Text); redirect {
		return true // MOVED/ASK: the command did not run; re-sending on the target is no replay
	}
	name := strings.ToUpper(cmd.Args[0])
	low := strings.ToLower(r.Text)
	switch {
	case name == "SET" && len(cmd.Args) > 3 && strings.EqualFold(cmd.Args[3], "IFEQ"):
		return r.Text == "ERR syntax error"
	case name == "DELEX" || name == "DELIFEQ":
		n := strings.ToLower(name)
		return strings.HasPrefix(low, "err unknown command '"+n+"',") ||
			strings.HasPrefix(low, "err unknown command `"+n+"`,")
	case name == "EVALSHA":
		return strings.HasPrefix(r.Text, "NOSCRIPT")
	}
	return false
}

// beforeExec reads the key the command touches (invariants 2 and 5).
func (k *checker) beforeExec(w *world, c *connection, r *request) keyState {
	if k.fenced[fenceKey{c.node.index, c.generation, c.clientID}] {
		k.fail(w, 5, "%s ran on fenced connection id=%d after its CLIENT KILL reply", r.cmd.Args[0], c.clientID)
	}
	if r.op == nil || r.op.kind == OpVerify {
		return keyState{}
	}
	return c.node.state(w, r.op.h.key)
}

// afterExec: invariant 2, and the server-side lease end of the owner.
func (k *checker) afterExec(w *world, c *connection, r *request, before keyState) {
	op := r.op
	if op == nil || op.kind == OpVerify {
		return
	}
	c.node.refresh(w, op.h.key)
	after := c.node.state(w, op.h.key)
	if after.found && after.pttl > 0 {
		k.expiry[after.token] = w.now + time.Duration(after.pttl)*time.Millisecond
	}
	if before.found && before.token == op.h.token {
		return
	}
	if op.kind == OpAcquire && !before.found {
		return
	}
	if after != before {
		k.fail(w, 2, "%s (%s) changed %s although it is not the owner (owner before: %s)",
			op.h.name, r.cmd.Args[0], op.h.key, w.ownerName(before))
	}
}

func (k *checker) onFenced(_ *world, c *connection) {
	k.fenced[fenceKey{c.node.index, c.generation, c.clientID}] = true
}

// onFailover: lease ends carry over (the keyspace is copied).
func (k *checker) onFailover(*world) {}

// ownerName names the handle owning a key state, for messages.
func (w *world) ownerName(s keyState) string {
	if !s.found {
		return "none"
	}
	for _, h := range w.handles {
		if h.token == s.token {
			return h.name
		}
	}
	return "unknown"
}

// afterStep checks invariants 1 and 4 against the belief of every handle
// that may still hold or keep alive a lease. A handle whose acquisition
// call was answered and whose core reached a terminal state without a live
// keep-alive context can never hold again and is no longer checked.
func (k *checker) afterStep(w *world) {
	owners := k.owners[:0]
	for _, key := range w.keys {
		owners = append(owners, w.keyState(key))
	}
	k.owners = owners
	for i, key := range w.keys {
		if o := owners[i]; o.found && k.cleaned[o.token] == key {
			k.fail(w, 8, "%s holds the token of an abandoned acquisition (%s) after its clean-up answered",
				key, w.ownerName(o))
			return
		}
	}
	live := w.live[:0]
	for _, h := range w.live {
		b := h.core.Belief()
		if h.outcome != "" && !b.Held && !b.KeepAliveLive && terminal(b.State) {
			continue
		}
		live = append(live, h)
		if !w.done {
			k.checkHandle(w, h, b, owners[h.keyIndex])
		}
	}
	clear(w.live[len(live):])
	w.live = live
}

// terminal reports whether a core state never leads back to holding.
func terminal(state string) bool {
	switch state {
	case "Released", "Lost", "NotAcquired", "Abandoned":
		return true
	}
	return false
}

// driftMargin is how much later than the truth a lease estimate of p may
// end: a clock running slow by d ppm stretches a lease of at most LeaseMax
// by d ppm of it (a fast clock errs on the safe side). One millisecond more
// covers the servers' whole-millisecond TTLs.
func (w *world) driftMargin(p *process) time.Duration {
	return time.Duration(max(0, -p.driftPPM)*int64(w.opt.LeaseMax)/1_000_000) + time.Millisecond
}

func (k *checker) checkHandle(w *world, h *handle, b Belief, owner keyState) {
	margin := w.driftMargin(h.proc)
	p := h.proc
	local := p.local(w.now)
	if b.Held && local < b.ExpiresLocal-margin && (!owner.found || owner.token != h.token) {
		k.fail(w, 1, "%s (%s) believes it holds %s for %s more, but the server's owner is %s%s",
			h.name, b.State, h.key, b.ExpiresLocal-local, w.ownerName(owner), inFlight(h))
		return
	}
	end, known := k.expiry[h.token]
	if b.KeepAliveLive && known && w.now > end+margin && !p.paused && !w.overdue(p) {
		k.fail(w, 4, "%s's keep-alive context is live %s after its server-side lease ended (%s, %d timer(s) armed%s)",
			h.name, w.now-end, b.State, len(h.timers), inFlight(h))
	}
}

// inFlight describes h's unfinished writes, for violation messages.
func inFlight(h *handle) string {
	ids := make([]int64, 0, len(h.ops))
	for id := range h.ops {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	s := ""
	for _, id := range ids {
		if op := h.ops[id]; !op.done && op.written && op.kind != OpVerify {
			s += fmt.Sprintf("; %s %s (ttl %s) in flight", op.kind, opLabel(op.id), op.ttl)
		}
	}
	return s
}

// overdue reports whether p has an event it has not yet had the chance to
// run (it was paused): its timers catch up first.
func (w *world) overdue(p *process) bool {
	for _, ev := range w.events {
		if ev.proc == p && !ev.cancelled && ev.due <= w.now {
			return true
		}
	}
	return false
}

// onAcquireResolved: invariant 7 in liveness schedules.
func (k *checker) onAcquireResolved(w *world, h *handle, e Effect) {
	if w.opt.Liveness && e.Outcome != "acquired" {
		k.fail(w, 7, "%s gave up acquiring %s (%s %s) in a fault-free schedule, budget %s",
			h.name, h.key, e.Outcome, e.Err, h.waitBudget)
	}
}
