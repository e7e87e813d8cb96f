package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// Guarded writes in the campaign: while it holds a mutex key, a worker
// writes through Lock.Guard — an RPUSH of its holding's label to the key's
// log "{key}:log", in the key's slot — at moments drawn from a PCG stream
// of its own (so that its other decisions stay what they were). Over a sim
// node the checker then holds the rule no-guarded-write-after-takeover
// on the execution history: a guard script that wrote (answered :1) ran
// for the token of the key's latest acquisition before it (a SET NX
// answered +OK, the outsider's included, or a fair try answered :1: the
// fair waiters take the key with a script, fair.go) — no guarded write lands after
// another owner acquired the lock. A real server has no execution
// history: the rule is skipped there (noted), as the other sim-only rules
// are.

// RuleGuardAfterTakeover is the rule of guarded writes.
const RuleGuardAfterTakeover Rule = "no-guarded-write-after-takeover"

// streamGuardWorkers: worker w's guarded-write decisions come from stream
// streamGuardWorkers+w.
const streamGuardWorkers = 1<<62 + 1<<40

// guardRand returns worker w's guarded-write PCG.
func guardRand(seed uint64, w int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, streamGuardWorkers+uint64(w)))
}

// logKey is the list a key's holders write to through guarded writes.
func logKey(key string) string { return "{" + key + "}:log" }

// maybeGuard makes, one sample in three, a guarded write of h's label to
// its key's log, and counts its outcome.
func (w *worker) maybeGuard(lock *lease.Lock, h *holding) {
	if w.guardRng == nil || w.guardRng.IntN(3) != 0 {
		return
	}
	timeout := shortOrNormal(w.guardRng, 4, 2*time.Millisecond, 30*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	err := lock.Guard(ctx, lease.Command("RPUSH", logKey(h.key), h.label))
	cancel()
	switch {
	case err == nil:
		w.stats.GuardedWrites++
	case errors.Is(err, lease.ErrOwnershipLost) && !errors.Is(err, lease.ErrNotHeld):
		w.stats.GuardRefusals++
		h.told("Guard: " + err.Error())
	case errors.Is(err, lease.ErrNotWritten):
		w.stats.GuardNotWritten++
	case errors.Is(err, conn.ErrOutcomeUnknown):
		w.stats.GuardUnknown++
		w.stats.Uncertain++
	}
}

// guardRun is one execution of a guarded-write script in the history.
type guardRun struct {
	key, token string
	wrote      bool
}

// guardRunOf reads a guarded-write script's execution: its lease key
// (KEYS[1]), its token (ARGV[1]) and whether it wrote (:1).
func guardRunOf(args []string, reply string) (guardRun, bool) {
	if len(args) < 5 {
		return guardRun{}, false
	}
	name := strings.ToUpper(args[0])
	if !(name == "EVALSHA" && strings.EqualFold(args[1], conn.GuardWritesScriptSHA) || name == "EVAL" && args[1] == conn.GuardWritesScript) {
		return guardRun{}, false
	}
	n, err := strconv.Atoi(args[2])
	if err != nil || n < 1 || len(args) <= 3+n {
		return guardRun{}, false
	}
	return guardRun{key: args[3], token: args[3+n], wrote: strings.HasPrefix(reply, ":1\r")}, true
}

// checkGuardAfterTakeover holds no-guarded-write-after-takeover over the
// sim node's history (see the top of this file) and counts the guard
// scripts that ran for a token the key no longer held (refused, or, when
// the rule breaks, written).
func checkGuardAfterTakeover(obs observation) (out []Violation, stale int) {
	latest := map[string]string{} // key -> the token of its latest acquisition
	owners := ownersByToken(obs)
	for _, e := range obs.history {
		if token, ok := setNXToken(e.Args); ok && strings.HasPrefix(e.Reply, "+OK") {
			latest[e.Args[1]] = token
			continue
		}
		if key, token, _, ok := handOverTake(e); ok {
			latest[key] = token
			continue
		}
		if token, _, ok := fairTake(e); ok {
			latest[e.Args[3]] = token // KEYS[1], the lock's key
			continue
		}
		g, ok := guardRunOf(e.Args, e.Reply)
		if !ok || latest[g.key] == g.token {
			continue
		}
		stale++
		if g.wrote {
			out = append(out, Violation{Rule: RuleGuardAfterTakeover, Key: g.key, Evidence: fmt.Sprintf(
				"a guarded write of %s ran at seq %d (%s) after %s acquired the key", owners.name(g.token), e.Seq,
				rel(obs.start, e.At), owners.name(latest[g.key]))})
		}
	}
	return out, stale
}
