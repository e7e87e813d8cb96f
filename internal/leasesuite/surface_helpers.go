package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/lease"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

// Helpers of the tests of lease's public surface (Lock.Context, errors,
// fmt/slog, bounded Close, a closed rueidis client, waiting).

// isExtendOf matches a renewal of key, whichever form the server needs:
// SET key … IFEQ …, or the compare-and-pexpire script (EVALSHA/EVAL sha 1
// key token ms).
func isExtendOf(key string) func(sim.Entry) bool {
	return func(e sim.Entry) bool {
		switch strings.ToUpper(e.Args[0]) {
		case "SET":
			return len(e.Args) >= 5 && e.Args[1] == key && strings.EqualFold(e.Args[3], "IFEQ")
		case "EVALSHA", "EVAL":
			return len(e.Args) == 6 && e.Args[3] == key
		}
		return false
	}
}

// advanceBoth moves the lease runtime's manual clock and, on a sim node,
// the node's clock (its keys expire on it) by d; a real server keeps real
// time.
func advanceBoth(tg *target, clock *actor.ManualClock, d time.Duration) {
	if tg.clock != nil {
		tg.clock.Advance(d)
	}
	clock.Advance(d)
}

// takeOverAfterExpiry lets key expire on the server (the node's clock moves
// past ttl on a sim node; a real server gets PEXPIRE 1 and real time) while
// the lease runtime's clock stands still, then another owner takes it with
// SET NX, as happens to a handle whose process was paused past its lease.
func takeOverAfterExpiry(t *testing.T, tg *target, key string, ttl time.Duration) {
	t.Helper()
	if tg.clock != nil {
		tg.clock.Advance(ttl + time.Millisecond)
	} else {
		tg.srv.Exec("PEXPIRE", key, "1")
		eventually(t, "the key expired on the server", func() bool { return tg.srv.Exec("EXISTS", key) == ":0\r\n" })
	}
	if got := tg.srv.Exec("SET", key, "another-owner", "NX", "PX", "600000"); got != "+OK\r\n" {
		t.Fatalf("the other owner's SET NX = %q; the key should have expired", got)
	}
}

// lossOf returns cause as a *LossError, failing t unless it is one that
// also matches ErrOwnershipLost.
func lossOf(t *testing.T, cause error) *lease.LossError {
	t.Helper()
	var loss *lease.LossError
	if !errors.As(cause, &loss) || !errors.Is(cause, lease.ErrOwnershipLost) {
		t.Fatalf("cause %v (%T); want a *LossError matching ErrOwnershipLost", cause, cause)
	}
	return loss
}

// causeOf waits (bounded) for ctx to end and returns its cause.
func causeOf(t *testing.T, ctx context.Context) error {
	t.Helper()
	waitDone(t, ctx)
	return context.Cause(ctx)
}

// leasePrefix finds the package prefix as a word ("Release: " holds none).
var leasePrefix = regexp.MustCompile(`\blease: `)

// assertOneLeasePrefix fails t unless err's text starts with exactly one
// "lease: " and names no inner package.
func assertOneLeasePrefix(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	text := err.Error()
	if !strings.HasPrefix(text, "lease: ") || len(leasePrefix.FindAllStringIndex(text, -1)) != 1 {
		t.Errorf("%s: error %q; want exactly one \"lease: \" prefix", what, text)
	}
	for _, inner := range []string{"statemachine:", "conn:", "respire:"} {
		if strings.Contains(text, inner) {
			t.Errorf("%s: error %q names %q", what, text, inner)
		}
	}
}
