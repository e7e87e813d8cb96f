package chaos

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/respire-go/respire/sim"
)

// acquireFailure is an Acquire that returned an error other than
// ErrNotAcquired, for the evidence of an orphan.
type acquireFailure struct {
	label, key string
	start, end time.Time
	err        string
	abandoned  bool          // the SET may have run: neither ErrNotAcquired nor not submitted
	kind       holdKind      // a mutex, or a permit or hold (key: its semaphore's or lock's name)
	lease      time.Duration // the lease asked for (permits and holds only)
}

// timelineOf renders the faults a schedule applied and lifted, naming the
// sim client each connection fault hit, for the report of a failing seed.
func timelineOf(obs observation) []string {
	clients := map[string]int64{} // upstream address -> CLIENT ID
	for _, e := range obs.history {
		clients[e.Addr] = e.ClientID
	}
	var out []string
	for _, e := range obs.events {
		f := e.f
		what := f.kind.String()
		switch f.kind {
		case FaultStall, FaultBlackHole:
			what += " " + f.dir.String()
		case FaultDelay:
			what += fmt.Sprintf(" %s by %s", f.dir, ms(f.delay))
		case FaultKill:
			what += fmt.Sprintf(" client %d", f.killed)
		case FaultCloseLocks:
			what += fmt.Sprintf(" of process %d", f.target%obs.processes)
		case FaultPartition:
			what += fmt.Sprintf(" of process %d (%d connections)", f.process-1, len(f.conns))
		case FaultDropPush, FaultDelayPush:
			what += " of " + cmp.Or(f.key, "every key")
		}
		if id, ok := clients[e.upstream]; ok {
			what += fmt.Sprintf(" on client %d", id)
		} else if e.upstream != "" {
			what += " on " + e.upstream
		}
		if e.lift {
			what = "lift " + what
		}
		out = append(out, rel(obs.start, e.at)+" "+what)
	}
	return out
}

// failuresAround lists the failed acquisitions of key that were in flight
// when exec ran.
func failuresAround(obs observation, key string, exec sim.Execution) string {
	var parts []string
	for _, f := range obs.failures {
		if f.key == key && !f.start.After(exec.At) && !f.end.Before(exec.At) {
			parts = append(parts, fmt.Sprintf("%s [%s, %s]: %s", f.label, rel(obs.start, f.start), rel(obs.start, f.end), f.err))
		}
	}
	if len(parts) == 0 {
		return "no failed Acquire was in flight then"
	}
	return "Acquire calls in flight then that failed: " + strings.Join(parts, "; ")
}
