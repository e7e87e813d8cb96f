package chaos

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// leaseEnd is where a token's lease ends on the server: the last write of
// it that ran, plus that write's PX.
type leaseEnd struct {
	at   time.Time
	exec sim.Execution
}

// checkOutlived: a handle's belief — its furthest sampled promise, cut by
// its release call and its keep-alive's end — never ends later than its
// token's lease on the server plus the drift margin. The library counts
// its estimate from before each send and the server from when it ran the
// write, so the server's lease can only outlive the promise; a renewal of
// unknown outcome taken as confirmed breaks that. It judges mutex leases
// (a key's value): a permit's or hold's lease is a sorted-set score written
// by the primitives' scripts, which the limit and reader/writer checks of
// primcheck.go judge.
func checkOutlived(obs observation) []Violation {
	ends := serverLeaseEnds(obs.history)
	var out []Violation
	for _, h := range obs.holdings {
		if h.kind != holdMutex {
			continue
		}
		belief := h.beliefEnd()
		if !belief.After(h.acquiredAt) {
			continue
		}
		end, ok := ends[h.token]
		if !ok {
			out = append(out, Violation{Rule: RuleOutlived, Key: h.key, Evidence: fmt.Sprintf(
				"%s believed it held the key until %s, but no write of its token ran", h.label, rel(obs.start, belief))})
			continue
		}
		if over := belief.Sub(end.at); over > driftMargin(h.lease) {
			out = append(out, Violation{Rule: RuleOutlived, Key: h.key, Evidence: fmt.Sprintf(
				"%s believed it held the key until %s, %s after its lease ended on the server (%s at seq %d, %s, gave it until %s): %s",
				h.label, rel(obs.start, belief), over.Round(time.Microsecond), argsText(end.exec.Args), end.exec.Seq,
				rel(obs.start, end.exec.At), rel(obs.start, end.at), h.describe(obs.start))})
		}
	}
	return out
}

// serverLeaseEnds returns, per token, where its lease ends after the
// history: the last executed write that set the token's TTL (an acquiring
// SET NX PX answered OK, an extension answered as applied) plus its PX.
func serverLeaseEnds(history []sim.Execution) map[string]leaseEnd {
	ends := map[string]leaseEnd{}
	for _, e := range history {
		token, ttl, ok := leaseWrite(e)
		if !ok {
			_, token, ttl, ok = handOverTake(e)
		}
		if !ok {
			token, ttl, ok = fairTake(e)
			if _, held := ends[token]; held {
				ok = false // a later fair try of a holder answers 1 and writes nothing
			}
		}
		if ok {
			ends[token] = leaseEnd{at: e.At.Add(ttl), exec: e}
		}
	}
	return ends
}

// leaseWrite reports the token and PX of an execution that gave a token
// its lease: SET k tok NX PX ms or SET k tok IFEQ tok PX ms answered +OK,
// the extension script (EVALSHA or EVAL) answered :1.
func leaseWrite(e sim.Execution) (token string, ttl time.Duration, ok bool) {
	a := e.Args
	var ms string
	switch name := strings.ToUpper(a[0]); {
	case name == "SET" && len(a) == 6 && strings.EqualFold(a[4], "PX") && strings.HasPrefix(e.Reply, "+OK"):
		token, ms = a[2], a[5]
	case name == "SET" && len(a) == 7 && strings.EqualFold(a[3], "IFEQ") && strings.EqualFold(a[5], "PX") &&
		strings.HasPrefix(e.Reply, "+OK"):
		token, ms = a[2], a[6]
	case (name == "EVALSHA" && len(a) == 6 && strings.EqualFold(a[1], conn.ExtendScriptSHA) ||
		name == "EVAL" && len(a) == 6 && a[1] == conn.ExtendScript) && strings.HasPrefix(e.Reply, ":1\r"):
		token, ms = a[4], a[5]
	default:
		return "", 0, false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return token, time.Duration(n) * time.Millisecond, true
}
