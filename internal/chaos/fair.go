package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// Fair waiting in the schedules (plan.fair, one seed in two): the mutex
// workers take about half their locks with lease.WithFairWait, on the
// same keys as the others, under the same faults, so every rule of a
// mutex judges them too. On a sim node two more rules judge the queues,
// on a replay of the node's history (every command that touched a key's
// lock or queue, re-run on a fresh engine at the time it ran, each reply
// compared with the one recorded):
//
//   - fair-order: a waiter granted the lock (a reservation, or the lock
//     taken at the head) leaves no waiter with an earlier ticket and a
//     live waiter lease in the queue;
//   - fair-no-lost-wakeup: a key that stayed free since some moment never
//     has a queued waiter whose waiter lease was renewed after it (that
//     renewal's script would have granted the key).
//
// The fair-head mutation of conn (-tags respire_mutation_fairhead: grants
// to the waiter behind the head) breaks fair-order; make chaos-mutation
// checks the campaign catches it.

// streamFairWorkers is the first PCG stream of the mutex workers' fair
// draws (worker w: streamFairWorkers+w), apart from their own streams so
// that a seed's decisions stay what they were.
const streamFairWorkers = 1<<62 + 1<<41

// fairOptions adds, in a schedule with fair waiting, WithFairWait (and a
// waiter lease of 100–600 ms) to about half the worker's acquisitions.
func (w *worker) fairOptions(opts []lease.AcquireOption) []lease.AcquireOption {
	if w.fairRng == nil || w.fairRng.IntN(2) == 0 {
		return opts
	}
	w.stats.FairCalls++
	return append(opts, lease.WithFairWait(), lease.WithWaiterLease(between(w.fairRng, 100*time.Millisecond, maxWaiterLease)))
}

// maxWaiterLease is the longest waiter lease of the schedules' fair
// waiters: a grant left to one that gave up lapses within it.
const maxWaiterLease = 600 * time.Millisecond

// fairTake reports the token and PX of a fair try that took the lock
// (answered :1): the lease it gave the token, as leaseWrite does for a SET.
func fairTake(e sim.Execution) (token string, ttl time.Duration, ok bool) {
	a := e.Args
	if len(a) < 9 || !strings.HasPrefix(e.Reply, ":1\r") || !isFairTry(a) {
		return "", 0, false
	}
	ms, err := strconv.ParseInt(a[7], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return a[6], time.Duration(ms) * time.Millisecond, true
}

// isFairTry reports whether args are a mutex's fair try (EVALSHA or EVAL).
func isFairTry(a []string) bool {
	switch strings.ToUpper(a[0]) {
	case "EVALSHA":
		return strings.EqualFold(a[1], conn.ScriptSHA(conn.FairMutexTryScript))
	case "EVAL":
		return a[1] == conn.FairMutexTryScript
	}
	return false
}

// checkFair runs the two rules on every key's replayed queue.
func checkFair(obs observation) []Violation {
	if obs.history == nil {
		return nil
	}
	var out []Violation
	for _, key := range obs.keys {
		out = append(out, replayFair(obs, key)...)
	}
	return out
}

// fairReplay is the replay of one key's lock and queue.
type fairReplay struct {
	obs       observation
	key       string
	q         conn.FairQueue
	engine    *sim.Engine
	clock     *sim.ManualClock
	tickets   map[string]float64 // waiter token -> its ticket
	waiterMs  map[string]int64   // waiter token -> its waiter lease
	judged    map[string]bool
	freeSince time.Time // zero: the key is held (or nobody waits)
}

// replayFair re-runs, in order, every command of the history that named
// the key or its queue, judging the rules after each.
func replayFair(obs observation, key string) []Violation {
	q, err := conn.FairMutexQueue(key)
	if err != nil {
		return nil
	}
	r := &fairReplay{obs: obs, key: key, q: q, clock: sim.NewManualClock(obs.start), tickets: map[string]float64{},
		waiterMs: map[string]int64{}, judged: map[string]bool{}}
	r.engine = sim.NewEngine(sim.Config{Profile: obs.profile, Clock: r.clock})
	fair := false
	for _, e := range obs.history {
		if !r.touches(e.Args) {
			continue
		}
		r.clock.Set(e.At)
		reply := r.engine.AdminExec(e.Args...)
		if isFairTry(e.Args) || fairScript(e.Args) {
			fair = true
		}
		if !fair {
			continue
		}
		if !sameReply(reply, e.Reply) {
			return nil // the replay went another way (a TIME read a millisecond apart): judge nothing
		}
		if v, ok := r.judge(e); !ok {
			return []Violation{v}
		}
	}
	return nil
}

// touches reports whether a command names the key or one of its queue's.
func (r *fairReplay) touches(args []string) bool {
	return slices.ContainsFunc(args[1:], func(a string) bool {
		return a == r.key || a == r.q.QueueKey || a == r.q.LeasesKey
	})
}

// fairScript reports whether args run one of the mutex's fair scripts.
func fairScript(a []string) bool {
	if len(a) < 2 {
		return false
	}
	for _, s := range []string{conn.FairMutexTryScript, conn.FairMutexRenewScript, conn.FairMutexReleaseScript} {
		if a[1] == s || strings.EqualFold(a[1], conn.ScriptSHA(s)) {
			return true
		}
	}
	return false
}

// sameReply compares a replayed reply (RESP2) with a recorded one (RESP2
// or RESP3: only integers, simple strings, nil and errors are compared).
func sameReply(replayed, recorded string) bool {
	switch {
	case strings.HasPrefix(recorded, ":"), strings.HasPrefix(recorded, "+"), strings.HasPrefix(recorded, "-"):
		return replayed == recorded
	}
	return true
}

// judge reads the replayed queue after e and judges both rules.
func (r *fairReplay) judge(e sim.Execution) (Violation, bool) {
	if isFairTry(e.Args) && len(e.Args) >= 9 {
		if ms, err := strconv.ParseInt(e.Args[8], 10, 64); err == nil {
			r.waiterMs[e.Args[6]] = ms
		}
	}
	now := e.At.UnixMilli()
	live, leases := r.readQueue(now)
	value, held := r.value()
	if g, ok := r.grantee(value, held); ok && !r.judged[g] {
		r.judged[g] = true
		mine, known := r.tickets[g]
		for _, y := range live {
			if !known || r.tickets[y] < mine {
				return Violation{Rule: RuleFairOrder, Key: r.key, Evidence: fmt.Sprintf(
					"granted to %s at %s (seq %d: %s) while %s, with an earlier ticket, waited with a live waiter lease",
					short(g), rel(r.obs.start, e.At), e.Seq, argsText(e.Args[:min(len(e.Args), 4)]), short(y))}, false
			}
		}
	}
	if held || len(live) == 0 {
		r.freeSince = time.Time{}
		return Violation{}, true
	}
	if r.freeSince.IsZero() {
		r.freeSince = e.At
		return Violation{}, true
	}
	for _, y := range live {
		wl, ok := r.waiterMs[y]
		renewed := time.UnixMilli(int64(leases[y]) - wl)
		if ok && renewed.After(r.freeSince) {
			return Violation{Rule: RuleFairWakeUp, Key: r.key, Evidence: fmt.Sprintf(
				"free since %s while %s renewed its place at %s without a grant", rel(r.obs.start, r.freeSince),
				short(y), rel(r.obs.start, renewed))}, false
		}
	}
	return Violation{}, true
}

// readQueue returns the replayed queue's waiters with a live waiter lease
// (by now), in ticket order, and every waiter's lease end; it records
// every ticket seen.
func (r *fairReplay) readQueue(now int64) (live []string, leases map[string]float64) {
	leases = map[string]float64{}
	for _, p := range r.scores(r.q.LeasesKey) {
		leases[p.member] = p.score
	}
	for _, p := range r.scores(r.q.QueueKey) {
		r.tickets[p.member] = p.score
		if leases[p.member] > float64(now) {
			live = append(live, p.member)
		}
	}
	return live, leases
}

// scored is a sorted set's member and its score.
type scored struct {
	member string
	score  float64
}

// scores reads the positive-scored members of a replayed sorted set.
func (r *fairReplay) scores(key string) []scored {
	reply := r.engine.AdminExec("EVAL", "return table.concat(redis.call('zrangebyscore', KEYS[1], '(0', '+inf', 'WITHSCORES'), '\\n')",
		"1", key)
	text, ok := bulkValue(reply)
	if !ok || text == "" {
		return nil
	}
	parts := strings.Split(text, "\n")
	var out []scored
	for i := 0; i+1 < len(parts); i += 2 {
		f, _ := strconv.ParseFloat(parts[i+1], 64)
		out = append(out, scored{parts[i], f})
	}
	return out
}

// value reads the replayed key.
func (r *fairReplay) value() (string, bool) {
	return bulkValue(r.engine.AdminExec("GET", r.key))
}

// grantee returns the fair waiter the key is granted to: a reservation's,
// or a holder that queued.
func (r *fairReplay) grantee(value string, held bool) (string, bool) {
	if !held {
		return "", false
	}
	if t, ok := strings.CutPrefix(value, conn.FairReservationPrefix); ok {
		return t, true
	}
	_, waited := r.waiterMs[value]
	return value, waited
}

// bulkValue parses a RESP2 bulk reply; found false for nil (or another
// kind of reply).
func bulkValue(reply string) (string, bool) {
	if !strings.HasPrefix(reply, "$") || strings.HasPrefix(reply, "$-1") {
		return "", false
	}
	return bulkText(reply), true
}
