package dst

import (
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
)

// Fair waiting (Options.FairPercent): some acquisitions of the mutex keys
// and of the primitives queue (actor.FairSpec), with a waiter lease of
// their own. The checker reads each queue on its server after every
// script of it, as an administrator, and holds two invariants:
//
//	(14) grant order is ticket order: a waiter the lock is granted to (a
//	     reservation, or the lock taken at once at the head) leaves no
//	     waiter with an earlier ticket and a live waiter lease in the
//	     queue;
//	(15) no lost wake-up: a mutex (a semaphore) that stayed free (below
//	     its limit) since some moment never has a queued waiter whose
//	     waiter lease was renewed after that moment — that renewal's
//	     script would have granted it (or the waiters ahead of it).
//
// conn's build tag respire_mutation_fairhead (the scripts grant to the
// waiter behind the head) breaks (14); make dst-mutation checks it is
// caught.

// fairBook is what the checker knows of the fair queues.
type fairBook struct {
	ticket     map[string]float64       // waiter token -> its ticket, as last seen in a queue
	judged     map[string]bool          // grantees already judged by (14)
	waiterMs   map[string]int64         // waiter token -> its waiter lease (ms), from the handles' specs
	freeSince  map[string]time.Duration // resource key -> true time it was first seen free (with waiters), -1 none
	resources  map[string]*fairRes      // resource key -> what it is
	checkOrder []string                 // resource keys in the order first seen (determinism)
}

// fairRes is one lock with a fair queue.
type fairRes struct {
	key   string // the lock's key (a mutex's, a semaphore's holders, a lock's writer key)
	queue conn.FairQueue
	kind  actor.Kind
	limit int
	rw    conn.RWLock
}

func newFairBook() fairBook {
	return fairBook{ticket: map[string]float64{}, judged: map[string]bool{}, waiterMs: map[string]int64{},
		freeSince: map[string]time.Duration{}, resources: map[string]*fairRes{}}
}

// maybeFair makes h's acquisition fair, as Options.FairPercent says (it
// draws nothing when the schedule has no fair waiting).
func (w *world) maybeFair(h *handle) {
	if w.opt.FairPercent <= 0 || h.spec.Fenced != nil || w.fairRng.IntN(100) >= w.opt.FairPercent {
		return
	}
	lease := w.between(w.opt.LeaseMin/2, w.opt.LeaseMax)
	h.spec.Fair = &actor.FairSpec{WaiterLease: lease}
	var r fairRes
	switch h.spec.Kind {
	case actor.KindPermit:
		s := conn.SemaphoreOfHolders(h.spec.WireKey, h.spec.Limit)
		r = fairRes{key: s.HoldersKey, queue: s.Queue(), kind: actor.KindPermit, limit: h.spec.Limit}
	case actor.KindRead, actor.KindWrite:
		rw := conn.RWLockOfKey(h.spec.WireKey)
		r = fairRes{key: rw.WriterKey, queue: rw.Queue(), kind: actor.KindWrite, rw: rw}
	default:
		q, err := conn.FairMutexQueue(h.spec.WireKey)
		if err != nil {
			h.spec.Fair = nil
			return
		}
		r = fairRes{key: h.spec.WireKey, queue: q, kind: actor.KindMutex}
	}
	b := &w.check.fair
	if b.resources[r.key] == nil {
		b.resources[r.key] = &r
		b.checkOrder = append(b.checkOrder, r.key)
		b.freeSince[r.key] = -1
	}
	w.stats.FairWaits++
	h.fairQueue = r.queue.QueueKey
}

// fairResourceOf returns the fair resource an op's key (KEYS[1]) names.
func (k *checker) fairResourceOf(key string) *fairRes { return k.fair.resources[key] }

// afterFairExec: after a fair script ran on n, read its queue and judge
// the grants it made (invariant 15).
func (k *checker) afterFairExec(w *world, n *node, req *request, reply conn.Reply) {
	op := req.op
	if op == nil || !strings.HasPrefix(op.name, "fair-") || reply.Kind == conn.ReplyError {
		return
	}
	if op.isAcquisition() {
		k.noteWaiterLease(req.cmd)
	}
	if op.name == "fair-waiters" || op.name == "fair-overtaken" {
		return
	}
	r := k.fairResourceOf(op.key)
	if r == nil {
		return
	}
	switch r.kind { // the token's member, as afterMemberExec reads it for the scripts named after their sets
	case actor.KindPermit:
		k.members.read(w, n, r.key, op.token)
	case actor.KindWrite:
		k.members.read(w, n, r.rw.ReadersKey, op.token)
	}
	if reply.Kind == conn.ReplyInt && reply.Int < 0 {
		w.stats.FairQueued++
	}
	waiters := k.readQueue(w, n, r)
	for _, g := range k.grantees(w, n, r) {
		if k.fair.judged[g] {
			continue
		}
		k.fair.judged[g] = true
		w.stats.FairGrants++
		mine, known := k.fair.ticket[g]
		for _, y := range waiters {
			if !known || k.fair.ticket[y] < mine {
				k.fail(w, 15, "%s granted to %s (ticket %v) while %s (ticket %v) waits ahead of it with a live waiter lease",
					r.key, tokenName(g), ticketText(mine, known), tokenName(y), k.fair.ticket[y])
				return
			}
		}
	}
}

func ticketText(t float64, known bool) string {
	if !known {
		return "drawn and granted in one script"
	}
	return strconv.FormatFloat(t, 'f', -1, 64)
}

// readQueue reads r's queue on n: it records every waiter's ticket and
// returns the waiters whose waiter lease is live, in ticket order.
func (k *checker) readQueue(w *world, n *node, r *fairRes) []string {
	now := w.Now().UnixMilli()
	tickets := pairs(n.engine.AdminExec("EVAL", "return table.concat(redis.call('zrangebyscore', KEYS[1], '(0', '+inf', 'WITHSCORES'), '\\n')", "1", r.queue.QueueKey))
	leases := map[string]float64{}
	for _, p := range pairs(n.engine.AdminExec("EVAL", "return table.concat(redis.call('zrangebyscore', KEYS[1], '(0', '+inf', 'WITHSCORES'), '\\n')", "1", r.queue.LeasesKey)) {
		leases[p.member] = p.score
	}
	var live []string
	for _, p := range tickets {
		k.fair.ticket[p.member] = p.score
		if leases[p.member] > float64(now) {
			live = append(live, p.member)
		}
	}
	return live
}

// scored is one member of a sorted set and its score.
type scored struct {
	member string
	score  float64
}

// pairs parses the bulk reply of a script that joined a WITHSCORES range
// with newlines.
func pairs(reply string) []scored {
	r := parseReply([]byte(reply))
	if r.Kind != conn.ReplyBulk || r.Text == "" {
		return nil
	}
	parts := strings.Split(r.Text, "\n")
	out := make([]scored, 0, len(parts)/2)
	for i := 0; i+1 < len(parts); i += 2 {
		f, _ := strconv.ParseFloat(parts[i+1], 64)
		out = append(out, scored{parts[i], f})
	}
	return out
}

// grantees returns the fair waiters r is granted to now: a reservation's,
// or a holder's whose token was a fair waiter's (it took the lock at once
// or claimed its reservation).
func (k *checker) grantees(w *world, n *node, r *fairRes) []string {
	var out []string
	fairToken := func(v string) {
		if t, ok := strings.CutPrefix(v, conn.FairReservationPrefix); ok {
			out = append(out, t)
		} else if _, waited := k.fair.waiterMs[v]; waited {
			out = append(out, v)
		}
	}
	switch r.kind {
	case actor.KindPermit:
		for _, m := range members(w, n, r.key) {
			fairToken(m)
		}
	case actor.KindWrite:
		if v, found, _ := n.owner(r.rw.WriterKey); found {
			fairToken(v)
		}
		for _, m := range members(w, n, r.rw.ReadersKey) {
			fairToken(m)
		}
	default:
		if v, found, _ := n.owner(r.key); found {
			fairToken(v)
		}
	}
	return out
}

// members returns the live members of the sorted set key on n (scores
// after now).
func members(w *world, n *node, key string) []string {
	now := strconv.FormatInt(w.Now().UnixMilli(), 10)
	var out []string
	for _, p := range pairs(n.engine.AdminExec("EVAL", "return table.concat(redis.call('zrangebyscore', KEYS[1], '('..ARGV[1], '+inf', 'WITHSCORES'), '\\n')", "1", key, now)) {
		out = append(out, p.member)
	}
	return out
}

// checkFairWakeUps is invariant 16, after every step: a mutex or
// semaphore free since freeSince has no queued waiter whose waiter lease
// was renewed after that.
func (k *checker) checkFairWakeUps(w *world) {
	for _, key := range k.fair.checkOrder {
		r := k.fair.resources[key]
		if r.kind == actor.KindWrite {
			continue
		}
		n := w.owner[key]
		if n == nil || n.paused || w.migrating[key] != nil {
			k.fair.freeSince[key] = -1
			continue
		}
		free := false
		if r.kind == actor.KindPermit {
			free = len(members(w, n, key)) < r.limit
		} else {
			_, found, _ := n.owner(key)
			free = !found
		}
		if !free {
			k.fair.freeSince[key] = -1
			continue
		}
		since := k.fair.freeSince[key]
		if since < 0 {
			k.fair.freeSince[key] = w.now
			continue
		}
		for _, p := range pairs(n.engine.AdminExec("EVAL", "return table.concat(redis.call('zrangebyscore', KEYS[1], '(0', '+inf', 'WITHSCORES'), '\\n')", "1", r.queue.LeasesKey)) {
			wl, ok := k.fair.waiterMs[p.member]
			renewed := time.UnixMilli(int64(p.score) - wl).Sub(epoch)
			if ok && renewed > since && p.score > float64(w.Now().UnixMilli()) {
				k.fail(w, 16, "%s free since %.3fms while %s's waiter lease was renewed at %.3fms without a grant (lost wake-up)",
					key, float64(since)/1e6, tokenName(p.member), float64(renewed)/1e6)
				return
			}
		}
	}
}

// noteWaiterLease records the waiter lease a fair try carries (its
// ARGV[3]) for its token (ARGV[1]).
func (k *checker) noteWaiterLease(cmd conn.Command) {
	a := cmd.Args
	n, err := strconv.Atoi(a[2])
	if err != nil || len(a) < 3+n+3 {
		return
	}
	if ms, err := strconv.ParseInt(a[3+n+2], 10, 64); err == nil {
		k.fair.waiterMs[a[3+n]] = ms
	}
}

// fairMayChange reports whether the fair script op may change its lock's
// key although op's token did not own it before (invariant 2): when the
// key was free or held a fair writer's waiting marker (the queue grants it
// to its head), or held op's own reservation (its claim, or its release).
func (k *checker) fairMayChange(op *opRun, before keyState) bool {
	if !before.found || before.token == conn.FairReservation(op.token) {
		return true
	}
	if t, ok := strings.CutPrefix(before.token, conn.WaitingMarkerPrefix); ok {
		_, fair := k.fair.waiterMs[t]
		return fair
	}
	return false
}

// reservations counts the live fair reservations (members "fair:" +
// token) of the sorted set key on n: a permit granted to a fair waiter
// that has not claimed it yet, which every acquisition counts as live.
func reservations(w *world, n *node, key string) int {
	c := 0
	for _, m := range members(w, n, key) {
		if strings.HasPrefix(m, conn.FairReservationPrefix) {
			c++
		}
	}
	return c
}
