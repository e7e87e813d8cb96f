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

// maxPerRule bounds the violations one schedule reports per rule; the
// first ones carry the evidence, the rest are counted.
const maxPerRule = 3

// check runs every rule the target allows and returns the violations and
// the notes about rules it could not run.
func check(obs observation) (violations []Violation, notes []string, abandonedExpired int) {
	if obs.readErr != nil {
		violations = append(violations, Violation{Rule: RuleScheduleBroken, Evidence: obs.readErr.Error()})
	}
	violations = append(violations, capped(checkTwoOwners(obs))...)
	if obs.real {
		notes = append(notes, "no-uncertain-resend, fence-is-final, lease-outlived and no-guarded-write-after-takeover not checked, fences not counted: a real server "+
			"has no execution history (MONITOR shows commands as they arrive, not which ran or were refused, and no CLIENT KILL)")
	} else {
		violations = append(violations, capped(checkResent(obs))...)
		violations = append(violations, capped(checkFencedRan(obs))...)
		violations = append(violations, capped(checkOutlived(obs))...)
		guarded, _ := checkGuardAfterTakeover(obs)
		violations = append(violations, capped(guarded)...)
		violations = append(violations, capped(checkFair(obs))...)
	}
	orphans, expired := checkOrphans(obs)
	violations = append(violations, capped(orphans)...)
	violations = append(violations, checkPrimitives(obs)...)
	return violations, notes, expired
}

// capped keeps the first maxPerRule violations and folds the rest into the
// last one kept.
func capped(vs []Violation) []Violation {
	if len(vs) <= maxPerRule {
		return vs
	}
	out := slices.Clone(vs[:maxPerRule])
	out[maxPerRule-1].Evidence += fmt.Sprintf(" (and %d more of this rule)", len(vs)-maxPerRule)
	return out
}

// driftMargin is the library's default drift margin for a lease of d.
func driftMargin(d time.Duration) time.Duration {
	return time.Duration(lease.DefaultDriftFraction*float64(d)) + lease.DefaultDriftFloor
}

// belief is an interval during which one owner believed it held a key.
type belief struct {
	who        string
	start, end time.Time
	margin     time.Duration
	detail     string
	released   bool     // it ended with a release call
	hold       *holding // the handle's holding (primitives' beliefs), else nil
}

// beliefs returns every owner's belief interval, per key, sorted by start:
// a handle from Acquire's return to its beliefEnd; an outsider's write from
// its reply to its send time plus PX less the margin. Both starts are taken
// after the server ran the SET, so they can only be late.
func beliefs(obs observation) map[string][]belief {
	out := map[string][]belief{}
	for _, h := range obs.holdings {
		if h.kind != holdMutex {
			continue // permits and holds: primcheck.go
		}
		if end := h.beliefEnd(); end.After(h.acquiredAt) {
			out[h.key] = append(out[h.key], belief{who: h.label + " " + short(h.token), start: h.acquiredAt, end: end,
				margin: driftMargin(h.lease), detail: h.describe(obs.start), released: end.Equal(h.endCallTime())})
		}
	}
	for _, w := range obs.writes {
		if end := w.sent.Add(w.px - driftMargin(w.px)); end.After(w.replied) {
			out[w.key] = append(out[w.key], belief{who: w.token, start: w.replied, end: end, margin: driftMargin(w.px),
				detail: fmt.Sprintf("SET NX PX %d sent %s", w.px.Milliseconds(), rel(obs.start, w.sent))})
		}
	}
	for _, bs := range out {
		slices.SortFunc(bs, func(a, b belief) int { return a.start.Compare(b.start) })
	}
	return out
}

// checkTwoOwners: for each key, the belief intervals of different tokens
// must not overlap by more than the later-ending one's drift margin. A
// correct run leaves a gap of at least the earlier owner's margin (it gives
// its belief up that much before its lease can end on the server, and the
// next owner's start is read after its SET ran); the tolerance of one more
// margin absorbs what the measurement itself adds (the time between the
// library's clock reading and ours, a callback's scheduling delay).
func checkTwoOwners(obs observation) []Violation {
	var out []Violation
	all := beliefs(obs)
	for _, key := range obs.keys {
		bs := all[key]
		for i := range bs {
			for j := i + 1; j < len(bs) && bs[j].start.Before(bs[i].end); j++ {
				a, b := bs[i], bs[j]
				overlap := earliest(a.end, b.end).Sub(b.start)
				tolerance := a.margin
				if b.end.After(a.end) {
					tolerance = b.margin
				}
				if overlap > tolerance {
					out = append(out, Violation{Rule: RuleTwoOwners, Key: key, Evidence: fmt.Sprintf(
						"%s believed [%s, %s] (%s) and %s believed [%s, %s] (%s): overlap %s > margin %s",
						a.who, rel(obs.start, a.start), rel(obs.start, a.end), a.detail,
						b.who, rel(obs.start, b.start), rel(obs.start, b.end), b.detail, ms(overlap), ms(tolerance))})
				}
			}
		}
	}
	return out
}

// closestGap returns the smallest gap between the latest end of the
// beliefs so far and the start of the next belief on a key, counted only
// where that end came from the lease (estimate, keep-alive, outsider's PX)
// rather than a release call, which may be followed at once by the next
// owner; false when there is none. It shows the drift margin at work.
func closestGap(obs observation) (time.Duration, bool) {
	var closest time.Duration
	seen := false
	for _, bs := range beliefs(obs) {
		for i := 1; i < len(bs); i++ {
			if prev := bs[i-1]; i > 1 && bs[i-2].end.After(prev.end) {
				bs[i-1] = belief{end: bs[i-2].end, released: bs[i-2].released} // carry the latest end forward
			}
			if gap := bs[i].start.Sub(bs[i-1].end); !bs[i-1].released && (!seen || gap < closest) {
				closest, seen = gap, true
			}
		}
	}
	return closest, seen
}

// earliest returns the earlier of two times.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// checkResent: per token, at most one executed SET … NX (or permit or
// read acquisition script) and at most one executed delete (or holder
// release script) that was not refused (an error reply is a refused step
// of the fallback ladder: unknown command, NOSCRIPT). A writer's
// acquisitions are not counted: a waiting writer tries again with its
// token on purpose, to refresh its marker.
func checkResent(obs observation) []Violation {
	sets, dels := map[string][]sim.Execution{}, map[string][]sim.Execution{}
	var order []string // tokens in order of first write, for a stable report
	for _, e := range obs.history {
		if strings.HasPrefix(e.Reply, "-") {
			continue
		}
		token, ok := acquireToken(e.Args)
		if !ok {
			_, token, _, ok = handOverTake(e)
		}
		if ok {
			if len(sets[token]) == 0 && len(dels[token]) == 0 {
				order = append(order, token)
			}
			sets[token] = append(sets[token], e)
		}
		token, ok = releaseToken(e.Args)
		if !ok {
			token, ok = handOverRelease(e)
		}
		if ok {
			if len(sets[token]) == 0 && len(dels[token]) == 0 {
				order = append(order, token)
			}
			dels[token] = append(dels[token], e)
		}
	}
	owners := ownersByToken(obs)
	var out []Violation
	for _, token := range order {
		for _, kind := range []struct {
			what string
			es   []sim.Execution
		}{{"SET NX", sets[token]}, {"delete", dels[token]}} {
			if what, es := kind.what, kind.es; len(es) > 1 {
				out = append(out, Violation{Rule: RuleResent, Key: commandKey(es[0].Args), Evidence: fmt.Sprintf(
					"%s of token %s ran %d times: %s", what, owners.name(token), len(es), executions(obs.start, es))})
			}
		}
	}
	return out
}

// acquireToken returns the token of an acquisition a token runs at most
// once: SET … NX, a permit's or a reader's acquisition script.
func acquireToken(args []string) (string, bool) {
	if token, ok := setNXToken(args); ok {
		return token, true
	}
	return scriptToken(args, onceAcquired)
}

// releaseToken returns the token of a delete a token runs at most once: a
// compare-and-delete, a permit's or a reader's release script.
func releaseToken(args []string) (string, bool) {
	if token, ok := deleteToken(args); ok {
		return token, true
	}
	return scriptToken(args, onceReleased)
}

// tokenScript is a script whose ARGV[1] is an owner token.
type tokenScript struct {
	sha, script string
	keys        int
}

var (
	onceAcquired = []tokenScript{{conn.SemaphoreAcquireScriptSHA, conn.SemaphoreAcquireScript, 1},
		{conn.ReadAcquireScriptSHA, conn.ReadAcquireScript, 2}}
	onceReleased = []tokenScript{{conn.HolderReleaseScriptSHA, conn.HolderReleaseScript, 1}} // a permit or a read hold
)

// scriptToken returns ARGV[1] of a run (EVALSHA or EVAL) of one of scripts.
func scriptToken(args []string, scripts []tokenScript) (string, bool) {
	if len(args) < 3 {
		return "", false
	}
	name := strings.ToUpper(args[0])
	for _, sc := range scripts {
		if (name == "EVALSHA" && args[1] == sc.sha || name == "EVAL" && args[1] == sc.script) &&
			args[2] == strconv.Itoa(sc.keys) && len(args) > 3+sc.keys {
			return args[3+sc.keys], true
		}
	}
	return "", false
}

// setNXToken returns the token of a SET key token … NX … command.
func setNXToken(args []string) (string, bool) {
	if len(args) < 4 || !strings.EqualFold(args[0], "SET") {
		return "", false
	}
	for _, a := range args[3:] {
		if strings.EqualFold(a, "NX") {
			return args[2], true
		}
	}
	return "", false
}

// deleteToken returns the token of a compare-and-delete, whichever form
// the server needed (conn.Operation's release steps).
func deleteToken(args []string) (string, bool) {
	switch name := strings.ToUpper(args[0]); {
	case name == "DELEX" && len(args) == 4 && strings.EqualFold(args[2], "IFEQ"):
		return args[3], true
	case name == "DELIFEQ" && len(args) == 3:
		return args[2], true
	case name == "EVALSHA" && len(args) == 5 && strings.EqualFold(args[1], conn.ReleaseScriptSHA):
		return args[4], true
	case name == "EVAL" && len(args) == 5 && args[1] == conn.ReleaseScript:
		return args[4], true
	}
	return "", false
}

// fenceTarget returns the client id of a fence, CLIENT KILL ID <x> ADDR <a>
// (not the SKIPME probe).
func fenceTarget(args []string) (int64, bool) {
	if len(args) < 6 || !strings.EqualFold(args[0], "CLIENT") || !strings.EqualFold(args[1], "KILL") {
		return 0, false
	}
	var id int64 = -1
	addr := false
	for i := 2; i+1 < len(args); i += 2 {
		switch strings.ToUpper(args[i]) {
		case "ID":
			id, _ = strconv.ParseInt(args[i+1], 10, 64)
		case "ADDR":
			addr = true
		case "SKIPME":
			return 0, false
		}
	}
	return id, addr && id >= 0
}

// countFences counts the fences a sim node executed.
func countFences(history []sim.Execution) int {
	n := 0
	for _, e := range history {
		if _, ok := fenceTarget(e.Args); ok && !strings.HasPrefix(e.Reply, "-") {
			n++
		}
	}
	return n
}

// checkFencedRan: after an executed fence of client x, no later execution
// by client x.
func checkFencedRan(obs observation) []Violation {
	fenced := map[int64]sim.Execution{}
	var out []Violation
	for _, e := range obs.history {
		if k, ok := fenced[e.ClientID]; ok {
			out = append(out, Violation{Rule: RuleFencedRan, Key: commandKey(e.Args), Evidence: fmt.Sprintf(
				"client %d ran %s at seq %d (%s) after the fence %q (reply %q) at seq %d (%s)",
				e.ClientID, argsText(e.Args), e.Seq, rel(obs.start, e.At), argsText(k.Args), k.Reply, k.Seq, rel(obs.start, k.At))})
		}
		if id, ok := fenceTarget(e.Args); ok && !strings.HasPrefix(e.Reply, "-") {
			if _, seen := fenced[id]; !seen {
				fenced[id] = e
			}
		}
	}
	return out
}

// owners maps a handle's token to its record.
type owners map[string]*holding

func ownersByToken(obs observation) owners {
	m := owners{}
	for _, h := range obs.holdings {
		m[h.token] = h
	}
	return m
}

// name names a token: its handle's label, or its prefix.
func (o owners) name(token string) string {
	if h := o[token]; h != nil {
		return h.label + " " + short(token)
	}
	if strings.HasPrefix(token, "outsider-") {
		return token
	}
	return short(token) + " (no Acquire returned it)"
}

// describe summarises a handle for evidence.
func (h *holding) describe(start time.Time) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := fmt.Sprintf("lease %s", ms(h.lease))
	if h.keepAlive {
		s += fmt.Sprintf(", keep-alive ended %s (%v)", rel(start, h.kaEnd), h.kaCause)
	}
	if !h.promise.IsZero() {
		s += ", estimate to " + rel(start, h.promise)
	}
	if !h.endCall.IsZero() {
		s += ", given up " + rel(start, h.endCall)
	}
	if h.toldLost {
		s += ", told it lost the lock or an outcome was unknown"
	}
	if h.outcome != "" {
		s += ", last told: " + h.outcome
	}
	return s
}

// executions renders executions for evidence.
func executions(start time.Time, es []sim.Execution) string {
	if len(es) == 0 {
		return "none"
	}
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = fmt.Sprintf("[seq %d client %d %s: %s → %q]", e.Seq, e.ClientID, rel(start, e.At), argsText(e.Args), e.Reply)
	}
	return strings.Join(parts, " ")
}

// argsText renders a command, scripts and tokens shortened.
func argsText(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case a == conn.ReleaseScript:
			out[i] = "<release script>"
		case len(a) == 32:
			out[i] = short(a)
		case len(a) == len(conn.WaitingMarkerPrefix)+32 && strings.HasPrefix(a, conn.WaitingMarkerPrefix):
			out[i] = conn.WaitingMarkerPrefix + short(a[len(conn.WaitingMarkerPrefix):])
		default:
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}

// commandKey returns the key a lock command names, "" for others.
func commandKey(args []string) string {
	switch name := strings.ToUpper(args[0]); {
	case len(args) >= 2 && slices.Contains([]string{"SET", "GET", "DELEX", "DELIFEQ"}, name):
		return args[1]
	case len(args) >= 4 && (name == "EVALSHA" || name == "EVAL"):
		return args[3]
	}
	return ""
}

// short shortens a token for evidence.
func short(token string) string {
	if len(token) > 8 {
		return token[:8] + "…"
	}
	return token
}

// rel renders t relative to the schedule's start.
func rel(start, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return "+" + ms(t.Sub(start))
}

// ms renders a duration in milliseconds with one decimal.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
}
