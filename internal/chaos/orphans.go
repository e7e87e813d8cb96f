package chaos

import (
	"fmt"
	"github.com/respire-go/respire/conn"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/sim"
)

// checkOrphans: no lock outlives its owners' clean-up. When everything is
// closed, every key left on the server holds an outsider's token or the
// token of a handle whose owner was not told it released the lock — never
// a token whose Release returned Released or whose Close returned nil with
// the state Released, and never a token nobody was given (an abandoned
// acquisition: Locks.Close waits for its clean-up). On a sim node the
// clean-up is also checked over the whole history (most orphans expire
// before the end): once a read of the key saw an abandoned token while its
// lease lasted, a delete of that token must follow — the clean-up reads the
// key after fencing the SET's socket and deletes only what it finds. An
// abandoned lease whose clean-up could not reach the server before it
// expired (a stalled or black-holed socket, a paused server: no fault-free
// cleanupWindow before the lease's end) is not an orphan; such leases are
// counted in Stats.AbandonedExpired.
func checkOrphans(obs observation) (out []Violation, expired int) {
	owners := ownersByToken(obs)
	for _, key := range obs.keys {
		st := obs.final[key]
		if !st.found || strings.HasPrefix(st.value, "outsider-") {
			continue
		}
		if strings.HasPrefix(st.value, conn.FairReservationPrefix) && st.pttl <= maxWaiterLease.Milliseconds() {
			continue // a grant to a fair waiter that left (or whose process closed): it lapses with its waiter lease (fair.go)
		}
		switch h := owners[st.value]; {
		case h != nil && h.released:
			out = append(out, Violation{Rule: RuleOrphan, Key: key, Evidence: fmt.Sprintf(
				"token of %s, which was told it released the lock (%s), is still there (PTTL %d ms); %s",
				h.label, h.outcome, st.pttl, tokenTrail(obs, st.value))})
		case h == nil:
			out = append(out, Violation{Rule: RuleOrphan, Key: key, Evidence: fmt.Sprintf(
				"token %s, which no Acquire returned, is still there after every Locks closed (PTTL %d ms); %s",
				short(st.value), st.pttl, tokenTrail(obs, st.value))})
		}
	}
	if !obs.real {
		v, n := uncleanedSets(obs, owners)
		out, expired = append(out, v...), n
	}
	return out, expired
}

// uncleanedSets checks, on a sim node, every abandoned acquisition's SET
// that took its key (see checkOrphans).
func uncleanedSets(obs observation, owners owners) (out []Violation, expired int) {
	for i, e := range obs.history {
		token, ok := setNXToken(e.Args)
		ok = ok && strings.HasPrefix(e.Reply, "+OK")
		end := e.At.Add(time.Duration(setNXMillis(e.Args)) * time.Millisecond)
		if _, next, ttl, handed := handOverTake(e); handed {
			token, ok, end = next, true, e.At.Add(ttl) // a hand-over's next owner, abandoned
		}
		if !ok || owners[token] != nil || strings.HasPrefix(token, "outsider-") {
			continue
		}
		seen, deleted := cleanupOf(obs.history[i+1:], commandKey(e.Args), token, end)
		switch {
		case deleted:
		case seen && healthyFor(obs, e.At, end, obs.scaled(cleanupWindow)):
			out = append(out, Violation{Rule: RuleOrphan, Key: commandKey(e.Args), Evidence: fmt.Sprintf(
				"token %s, which no Acquire returned, took the key at %s; a read saw it there while its lease lasted "+
					"and no delete of it followed; %s", short(token), rel(obs.start, e.At), tokenTrail(obs, token))})
		default:
			expired++
		}
	}
	return out, expired
}

// cleanupWindow is how long every fault must have been lifted, within an
// abandoned lease, for its clean-up to be expected to reach the server:
// the clean-up retries every 50 ms, and a call stuck on a faulted socket
// fails once the fault is lifted (a black-hole or a pause ends with the
// socket reset or answering).
const cleanupWindow = 150 * time.Millisecond

// healthyFor reports whether, between from and to, no fault was in force
// for at least d in a row. A clean-up stuck behind a stalled, black-holed
// or paused socket until the lease ran out is not an orphan: nothing could
// have reached the server (the lease then simply expires).
func healthyFor(obs observation, from, to time.Time, d time.Duration) bool {
	active, since := 0, from
	for _, ev := range obs.events {
		if ev.f.dur == 0 { // a one-shot fault (reset, close, kill, close-locks) holds nothing up
			continue
		}
		if ev.at.After(to) {
			break
		}
		if ev.lift {
			active--
			if active == 0 && ev.at.After(since) {
				since = ev.at
			}
			continue
		}
		if active == 0 && ev.at.After(from) && ev.at.Sub(since) >= d {
			return true
		}
		active++
	}
	return active == 0 && to.Sub(since) >= d
}

// cleanupOf reports, over the executions after an abandoned SET of token
// on key whose lease ends at end, whether a read of the key saw the token
// before end, and whether a delete of the token ran.
func cleanupOf(later []sim.Execution, key, token string, end time.Time) (seen, deleted bool) {
	for _, e := range later {
		if t, ok := deleteToken(e.Args); ok && t == token && !strings.HasPrefix(e.Reply, "-") {
			return seen, true
		}
		if t, ok := handOverRelease(e); ok && t == token {
			return seen, true
		}
		if strings.EqualFold(e.Args[0], "GET") && len(e.Args) == 2 && e.Args[1] == key &&
			strings.Contains(e.Reply, token) && e.At.Before(end) {
			seen = true
		}
	}
	return seen, false
}

// setNXMillis returns the PX of a SET … NX PX ms command (0 if none).
func setNXMillis(args []string) int64 {
	for i := 0; i+1 < len(args); i++ {
		if strings.EqualFold(args[i], "PX") {
			n, _ := strconv.ParseInt(args[i+1], 10, 64)
			return n
		}
	}
	return 0
}

// tokenTrail describes what the sim node ran and received of a token.
func tokenTrail(obs observation, token string) string {
	if obs.real {
		return "no history on a real server"
	}
	var ran []sim.Execution
	for _, e := range obs.history {
		if slices.Contains(e.Args, token) {
			ran = append(ran, e)
		}
	}
	arrived := 0
	for _, e := range obs.log {
		if slices.Contains(e.Args, token) {
			arrived++
		}
	}
	trail := fmt.Sprintf("%d commands of it arrived, these ran: %s", arrived, executions(obs.start, ran))
	if len(ran) > 0 {
		trail += "; " + failuresAround(obs, commandKey(ran[0].Args), ran[0])
	}
	return trail
}
