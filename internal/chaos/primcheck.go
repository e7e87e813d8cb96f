package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// The checks of the semaphore and the read/write lock (primitives.go):
//
//   - no-more-than-limit: at no instant are more permit beliefs live than
//     the semaphore's limit, each belief's end taken its drift margin
//     early (the tolerance no-two-owners allows a pair);
//   - no-reader-with-writer: a write hold's belief and a read hold's (or
//     another write hold's) overlap by no more than the later-ending one's
//     margin;
//   - writer-not-starved: while the schedule's one writer waits (from its
//     first waiting marker on the server: markerSince), no reader
//     is admitted once no fault has been in force for readerAdmission (its
//     next try, within a retry interval, has set or refreshed its waiting
//     marker, which refuses every new reader); and a writer that waited in
//     vain had the lock held, or a fault in force, within its last
//     freeLockWindow: no reader's or write hold's lease could have been on
//     the server then.
//   - permit-frees: a permit acquisition that waited in vain had, within
//     its last freeLockWindow with no fault in force, at least limit
//     permits' leases possibly on the server; so a holder that died
//     holding one (crashed, primitives.go) frees it by its lease end: its
//     lease is on the server at most from its acquisition to the
//     acquisition's return plus the lease (and the over-limit check says
//     it is not given away before its holder's estimate of that end);
//   - no-orphan (extended): a permit or read hold told Released is no live
//     member of its set at the end, a write hold told Released is not in
//     the writer key.

// readerAdmission is how long into a fault-free stretch of a writer's
// wait a reader may still be admitted: the writer's next try (retry
// interval 10 ms, jittered up to 15 ms) and a round trip, with room for a
// slow scheduler.
const readerAdmission = 150 * time.Millisecond

// freeLockWindow is how long the lock must have been free, with no fault,
// before a waiting writer's end for it to count as starved.
const freeLockWindow = 300 * time.Millisecond

// staleMarker bounds how long a marker of the writer's earlier attempt may
// refuse a later attempt (its lease with a 10 ms retry interval: 3·10 ms +
// 1 s, and slack).
const staleMarker = 1100 * time.Millisecond

// checkPrimitives runs the semaphore's and the read/write lock's checks.
func checkPrimitives(obs observation) []Violation {
	var out []Violation
	out = append(out, capped(checkOverLimit(obs))...)
	out = append(out, capped(checkReaderWriter(obs))...)
	out = append(out, capped(checkWriterStarved(obs))...)
	out = append(out, capped(checkPermitFrees(obs))...)
	out = append(out, capped(checkPrimOrphans(obs))...)
	return out
}

// primBeliefs returns the beliefs of the permits or holds of kinds.
func primBeliefs(obs observation, kinds ...holdKind) []belief {
	var out []belief
	for _, h := range obs.holdings {
		if !slices.Contains(kinds, h.kind) {
			continue
		}
		if end := h.beliefEnd(); end.After(h.acquiredAt) {
			out = append(out, belief{who: h.label + " " + short(h.token), start: h.acquiredAt, end: end,
				margin: driftMargin(h.lease), detail: h.kind.String() + ", " + h.describe(obs.start), hold: h})
		}
	}
	slices.SortFunc(out, func(a, b belief) int { return a.start.Compare(b.start) })
	return out
}

// checkOverLimit sweeps the permit beliefs, each cut by its margin.
func checkOverLimit(obs observation) []Violation {
	type edge struct {
		at   time.Time
		up   bool
		with belief
	}
	var edges []edge
	for _, b := range primBeliefs(obs, holdPermit) {
		if end := b.end.Add(-b.margin); end.After(b.start) {
			edges = append(edges, edge{at: b.start, up: true, with: b}, edge{at: end, with: b})
		}
	}
	slices.SortStableFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		if a.up == b.up {
			return 0
		}
		if !a.up {
			return -1 // an end before a start at the same instant
		}
		return 1
	})
	var live []belief
	var out []Violation
	for _, e := range edges {
		if !e.up {
			live = slices.DeleteFunc(live, func(b belief) bool { return b.who == e.with.who })
			continue
		}
		live = append(live, e.with)
		if len(live) > obs.prim.limit {
			var who []string
			for _, b := range live {
				who = append(who, fmt.Sprintf("%s [%s, %s] (%s)", b.who, rel(obs.start, b.start), rel(obs.start, b.end), b.detail))
			}
			out = append(out, Violation{Rule: RuleOverLimit, Key: obs.prim.sem, Evidence: fmt.Sprintf(
				"%d permits live at %s, limit %d: %s", len(live), rel(obs.start, e.at), obs.prim.limit, strings.Join(who, "; "))})
		}
	}
	return out
}

// checkReaderWriter: no write belief overlaps a read belief or another
// write belief by more than the later-ending one's margin.
func checkReaderWriter(obs observation) []Violation {
	var out []Violation
	writes, reads := primBeliefs(obs, holdWrite), primBeliefs(obs, holdRead)
	for i, w := range writes {
		for _, o := range append(slices.Clone(writes[i+1:]), reads...) {
			if !o.start.Before(w.end) || !w.start.Before(o.end) {
				continue
			}
			overlap := earliest(w.end, o.end).Sub(latest(w.start, o.start))
			tolerance := w.margin
			if o.end.After(w.end) {
				tolerance = o.margin
			}
			if overlap > tolerance {
				out = append(out, Violation{Rule: RuleReaderWriter, Key: obs.prim.rw, Evidence: fmt.Sprintf(
					"%s believed [%s, %s] (%s) and %s believed [%s, %s] (%s): overlap %s > margin %s",
					w.who, rel(obs.start, w.start), rel(obs.start, w.end), w.detail,
					o.who, rel(obs.start, o.start), rel(obs.start, o.end), o.detail, ms(overlap), ms(tolerance))})
			}
		}
	}
	return out
}

// checkWriterStarved: see the file's doc.
func checkWriterStarved(obs observation) []Violation {
	var out []Violation
	readers := primBeliefs(obs, holdRead)
	for _, ww := range obs.writers {
		waiting, ok := markerSince(obs, ww)
		for _, r := range readers {
			admitted := admittedAt(obs, r)
			if !ok || !admitted.After(waiting) || !admitted.Before(ww.end) {
				continue
			}
			quiet, ok := quietSince(obs, admitted)
			if !ok {
				continue
			}
			quiet = latest(quiet, waiting)
			if admitted.Sub(quiet) >= obs.scaled(readerAdmission) {
				out = append(out, Violation{Rule: RuleWriterStarved, Key: obs.prim.rw, Evidence: fmt.Sprintf(
					"%s was admitted at %s while writer %s waited [%s, %s], no fault in force since %s (%s)",
					r.who, rel(obs.start, admitted), ww.label, rel(obs.start, ww.start), rel(obs.start, ww.end),
					rel(obs.start, quiet), r.detail)})
			}
		}
		if v, ok := freeLockIgnored(obs, ww); ok {
			out = append(out, v)
		}
	}
	return out
}

// markerSince returns when the writer's wait ww began for the readers:
// on a sim node, when its first try set its waiting marker (a write
// acquisition on the writer key that answered 2 during ww; ok false if
// none did: it never waited on readers there); on a real server, whose
// executions are not recorded, when the first such try's reply was read
// (the wire log: the marker was set by then, however late a loaded
// machine ran the try), or, without a wire log, when the call started.
// (A call's first try can reach the server much later than the call
// starts: a process's first dial on a loaded machine.)
func markerSince(obs observation, ww primWait) (time.Time, bool) {
	key := writerKeyOf(obs.prim)
	if obs.history == nil && obs.wire != nil {
		var first time.Time
		for _, e := range obs.wire {
			if !e.sent.Before(ww.start) && !e.answered.After(ww.end) && e.reply == ":2\r\n" && isWriteAcquire(e.args, key) &&
				(first.IsZero() || e.answered.Before(first)) {
				first = e.answered
			}
		}
		return first, !first.IsZero()
	}
	if obs.history == nil {
		return ww.start, true
	}
	for _, e := range obs.history {
		if !e.At.Before(ww.start) && !e.At.After(ww.end) && e.Reply == ":2\r\n" && isWriteAcquire(e.Args, key) {
			return e.At, true
		}
	}
	return time.Time{}, false
}

// admittedAt returns when the read hold r was admitted, as early as it
// can have been: on a sim node, when its admitting script ran; on a real
// server with a wire log, when that script was sent; else when its
// acquisition returned (its belief's start), which a loaded machine can
// make much later than the admission.
func admittedAt(obs observation, r belief) time.Time {
	if r.hold == nil {
		return r.start
	}
	key, token := writerKeyOf(obs.prim), r.hold.token
	var at time.Time
	for _, e := range obs.history {
		if e.Reply == ":1\r\n" && isReadAcquire(e.Args, key, token) && !e.At.After(r.start) && e.At.After(at) {
			at = e.At
		}
	}
	for _, e := range obs.wire {
		if e.reply == ":1\r\n" && isReadAcquire(e.args, key, token) && !e.answered.After(r.start) && e.sent.After(at) {
			at = e.sent
		}
	}
	if at.IsZero() {
		return r.start
	}
	return at
}

// isReadAcquire matches a read acquisition script of token on the lock
// whose writer key is key.
func isReadAcquire(args []string, key, token string) bool {
	if len(args) < 7 || args[3] != key || args[5] != token {
		return false
	}
	name := strings.ToUpper(args[0])
	return name == "EVALSHA" && args[1] == conn.ReadAcquireScriptSHA || name == "EVAL" && args[1] == conn.ReadAcquireScript
}

// freeLockIgnored reports a writer that gave up though, for its last
// freeLockWindow, no fault was in force and no reader's or writer's lease
// could have been on the server.
func freeLockIgnored(obs observation, ww primWait) (Violation, bool) {
	from := ww.end.Add(-obs.scaled(freeLockWindow))
	if !ww.gaveUp || from.Before(ww.start) {
		return Violation{}, false
	}
	if quiet, ok := quietSince(obs, ww.end); !ok || quiet.After(from) {
		return Violation{}, false
	}
	for _, s := range shadows(obs, ww) {
		if s[0].Before(ww.end) && s[1].After(from) {
			return Violation{}, false
		}
	}
	return Violation{Rule: RuleWriterStarved, Key: obs.prim.rw, Evidence: fmt.Sprintf(
		"writer %s gave up at %s (waited since %s) though no reader or writer could have held the lock since %s, "+
			"with no fault in force; %s", ww.label, rel(obs.start, ww.end), rel(obs.start, ww.start), rel(obs.start, from),
		writerTrail(obs, ww.start, ww.end))}, true
}

// writerTrail renders what ran on the read/write lock's keys between from
// and to (the last 40 executions), for a violation's evidence.
func writerTrail(obs observation, from, to time.Time) string {
	if obs.history == nil {
		return "no history on a real server"
	}
	rw, _ := conn.NewRWLock("", obs.prim.rw)
	var ran []sim.Execution
	for _, e := range obs.history {
		if !e.At.Before(from) && !e.At.After(to) && (slices.Contains(e.Args, rw.WriterKey) || slices.Contains(e.Args, rw.ReadersKey)) {
			ran = append(ran, e)
		}
	}
	if len(ran) > 40 {
		ran = ran[len(ran)-40:]
	}
	return fmt.Sprintf("on the lock's keys then (last %d): %s", len(ran), executions(obs.start, ran))
}

// shadows returns the intervals during which a lease that refuses the
// writer ww may have been on the server: every read and write hold from
// its acquisition to its leaseUntil (a release that answered, or its
// belief's end plus its lease), every abandoned read or write acquisition
// from its start to its end plus its lease, and an earlier writer
// attempt's marker for staleMarker after it gave up, and what ww's own
// unsettled tries left behind (leftBehind).
func shadows(obs observation, ww primWait) [][2]time.Time {
	var out [][2]time.Time
	for _, h := range obs.holdings {
		if h.kind == holdRead || h.kind == holdWrite {
			out = append(out, [2]time.Time{h.acquiredAt, h.leaseUntil()})
		}
	}
	for _, f := range obs.failures {
		if f.abandoned && (f.kind == holdRead || f.kind == holdWrite) {
			out = append(out, [2]time.Time{f.start, f.end.Add(f.lease)})
		}
	}
	for _, o := range obs.writers {
		if o.start.Before(ww.start) && !o.acquired {
			out = append(out, [2]time.Time{o.start, o.end.Add(staleMarker)})
		}
	}
	return append(out, leftBehind(obs, ww)...)
}

// leftBehind returns, on a sim node, the leases that tries of ww itself
// left in the writer key under a token other than its last try's: a hold
// (reply 1) or a marker (reply 2) of a try whose outcome it could not
// settle (abandoned, or answered too late), which refuses its later tries
// until that try's clean-up deletes it or its lease ends (the clean-up's
// own timeliness is not this check's).
func leftBehind(obs observation, ww primWait) [][2]time.Time {
	key := writerKeyOf(obs.prim)
	var tries []sim.Execution
	for _, e := range obs.history {
		if !e.At.Before(ww.start) && !e.At.After(ww.end) && isWriteAcquire(e.Args, key) {
			tries = append(tries, e)
		}
	}
	if len(tries) == 0 {
		return nil
	}
	last := tries[len(tries)-1].Args[5]
	var out [][2]time.Time
	for _, e := range tries {
		arg := 0
		switch e.Reply {
		case ":1\r\n":
			arg = 6 // ARGV[2], the hold's lease
		case ":2\r\n":
			arg = 7 // ARGV[3], the marker's
		}
		if arg == 0 || e.Args[5] == last || len(e.Args) <= arg {
			continue
		}
		ms, _ := strconv.ParseInt(e.Args[arg], 10, 64)
		out = append(out, [2]time.Time{e.At, e.At.Add(time.Duration(ms) * time.Millisecond)})
	}
	return out
}

// isWriteAcquire reports whether args run the write acquisition script on
// the writer key key (ARGV from args[5] on).
func isWriteAcquire(args []string, key string) bool {
	if len(args) < 8 || args[3] != key {
		return false
	}
	name := strings.ToUpper(args[0])
	return name == "EVALSHA" && args[1] == conn.WriteAcquireScriptSHA || name == "EVAL" && args[1] == conn.WriteAcquireScript
}

// quietSince returns the start of the stretch, ending at t, during which
// no fault was in force and no one-shot fault (a reset, a close, a kill, a
// Locks.Close) happened; ok false when a fault is in force at t.
func quietSince(obs observation, t time.Time) (since time.Time, ok bool) {
	active, since := 0, obs.start
	for _, ev := range obs.events {
		if ev.at.After(t) {
			break
		}
		switch {
		case ev.f.dur == 0:
			since = ev.at
		case ev.lift:
			if active--; active == 0 {
				since = ev.at
			}
		default:
			active++
		}
	}
	return since, active == 0
}

// latest returns the later of two times.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// lateExecution bounds how long after the last fault that held it up an
// abandoned acquisition's script may still run (the bytes a stalled or
// delayed connection held are delivered at once when it lifts).
const lateExecution = 100 * time.Millisecond

// checkPermitFrees: see the file's doc.
func checkPermitFrees(obs observation) []Violation {
	var out []Violation
	for _, pw := range obs.permits {
		from := pw.end.Add(-obs.scaled(freeLockWindow))
		if !pw.gaveUp || from.Before(pw.start) {
			continue
		}
		quiet, ok := quietSince(obs, pw.end)
		if !ok || quiet.After(from) {
			continue
		}
		var could []string
		for _, s := range permitShadows(obs, quiet) {
			if s.from.Before(pw.end) && s.until.After(from) {
				could = append(could, s.who)
			}
		}
		if len(could) < obs.prim.limit {
			out = append(out, Violation{Rule: RulePermitFrees, Key: obs.prim.sem, Evidence: fmt.Sprintf(
				"%s waited [%s, %s] in vain, though from %s on, with no fault in force, only %d permits' leases could "+
					"have been on the server (limit %d): %s", pw.label, rel(obs.start, pw.start), rel(obs.start, pw.end),
				rel(obs.start, from), len(could), obs.prim.limit, strings.Join(could, "; "))})
		}
	}
	return out
}

// shadow is a stretch during which a lease may have been on the server.
type shadow struct {
	who         string
	from, until time.Time
}

// permitShadows returns when each permit's lease may have been on the
// server: a held permit's from its acquisition to its leaseUntil, an
// abandoned acquisition's from its start to its end (or the end of the
// last fault, quiet, if later) plus its lease and lateExecution.
func permitShadows(obs observation, quiet time.Time) []shadow {
	var out []shadow
	for _, h := range obs.holdings {
		if h.kind == holdPermit {
			who := h.label + " " + short(h.token)
			if h.crashed {
				who += " (died holding it)"
			}
			out = append(out, shadow{who: who, from: h.acquiredAt, until: h.leaseUntil()})
		}
	}
	for _, f := range obs.failures {
		if f.abandoned && f.kind == holdPermit {
			out = append(out, shadow{who: f.label + " (abandoned)", from: f.start,
				until: latest(f.end, quiet).Add(f.lease + obs.scaled(lateExecution))})
		}
	}
	return out
}

// checkPrimOrphans: a permit or read hold told Released is no live member
// at the end; a write hold told Released is not in the writer key.
func checkPrimOrphans(obs observation) []Violation {
	var out []Violation
	writer := obs.final[writerKeyOf(obs.prim)]
	for _, h := range obs.holdings {
		if h.kind == holdMutex || !h.released {
			continue
		}
		live := obs.members[h.token]
		if h.kind == holdWrite {
			live = writer.found && writer.value == h.token
		}
		if live {
			out = append(out, Violation{Rule: RuleOrphan, Key: h.key, Evidence: fmt.Sprintf(
				"%s %s was told it released its %s (%s), and it is still there at the end", h.label, short(h.token), h.kind, h.outcome)})
		}
	}
	return out
}

// writerKeyOf returns the read/write lock's writer key.
func writerKeyOf(p primPlan) string {
	rw, _ := conn.NewRWLock("", p.rw)
	return rw.WriterKey
}

// readMembers reads, by server time, which permits' and read holds'
// tokens are live members of their set at the end (the lease read
// script), and the writer key into the final state.
func (s *schedule) readMembers(holdings []*holding) (map[string]bool, error) {
	members := map[string]bool{}
	sem, _ := conn.NewSemaphore("", s.plan.prim.sem, s.plan.prim.limit)
	rw, _ := conn.NewRWLock("", s.plan.prim.rw)
	ctx, cancel := context.WithTimeout(context.Background(), normalTimeout)
	defer cancel()
	for _, h := range holdings {
		key := sem.HoldersKey
		switch h.kind {
		case holdMutex, holdWrite:
			continue
		case holdRead:
			key = rw.ReadersKey
		}
		n, err := s.srv.direct.Do(ctx, s.srv.direct.B().Eval().Script(conn.HolderLeaseScript).Numkeys(1).Key(key).
			Arg(h.token).Build()).AsInt64()
		if err != nil {
			return members, fmt.Errorf("reading %s's member: %w", key, err)
		}
		members[h.token] = n > 0
	}
	return members, nil
}
