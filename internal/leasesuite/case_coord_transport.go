package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/coordination"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/lease"
)

// These tests run a fenced lock's commands over real sockets through an
// in-process fault proxy (internal/faultproxy), against every sim profile
// and the real redis-server 7.0: the lock's session is lease's, so are its
// fences.

// proxied returns a Coordinator whose client connects through a fault
// proxy to s; the proxy's stalls are lifted when the test ends, before the
// Locks closes.
func proxied(t *testing.T, tr Transport, s coordServer) (*coordination.Coordinator, *faultproxy.Proxy) {
	t.Helper()
	p, err := faultproxy.Start(s.addr)
	if err != nil {
		t.Fatalf("fault proxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	// No idle check's PING ahead of a command: the command a stall holds must
	// be the one the test sends, however long the machine took to get there.
	c := newCoordinator(t, tr, []string{p.Addr()}, s.password, s.prefix, lease.WithIdleCheck(time.Hour))
	t.Cleanup(func() { p.UnstallAll(faultproxy.Both) })
	return c, p
}

// kills counts the CLIENT KILL … ADDR … fences s ran: from a sim node's
// log; from INFO commandstats on the real server (which counts the SKIPME
// probes too: compare with a count taken before).
func coordKills(t *testing.T, s coordServer) int {
	t.Helper()
	if s.srv != nil {
		n := 0
		for _, e := range s.srv.Log() {
			if coordIsKill(e.Args) {
				n++
			}
		}
		return n
	}
	for _, line := range strings.Split(s.exec(t, "INFO", "commandstats"), "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_client|kill:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// isKill matches a fence, CLIENT KILL ID … ADDR … (not the SKIPME probe).
func coordIsKill(args []string) bool {
	return len(args) >= 6 && strings.EqualFold(args[0], "CLIENT") && strings.EqualFold(args[1], "KILL") &&
		strings.EqualFold(args[4], "ADDR")
}

// waitReplyHeld waits (bounded) until the proxy holds a reply for the
// client: the command it answers has run on the server.
func waitReplyHeld(t *testing.T, p *faultproxy.Proxy) {
	t.Helper()
	eventuallyTrue(t, "a reply held by the proxy", func() bool {
		for _, c := range p.Conns() {
			if c.Buffered(faultproxy.ToClient) > 0 {
				return true
			}
		}
		return false
	})
}

// A ResetExpiry of a fenced lock whose reply does not come back before its
// ctx ends has an unknown outcome: the lock is no longer held at once, its
// Context ends with a loss, and the connection that carried the renewal is
// fenced with CLIENT KILL; ResetExpiry returns only once the kill answered
// (rule FenceBeforeReturn), and the lock is Lost then.
func caseFencedLockUncertainRenewalIsFencedOverRealSockets(t *testing.T, tr Transport) {
	forEachCoordServer(t, tr, func(t *testing.T, s coordServer) {
		c, p := proxied(t, tr, s)
		lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := lock.ResetExpiry(ctxT(t), time.Minute); !ok || err != nil { // the session's CLIENT KILL probe
			t.Fatalf("ResetExpiry = %v, %v", ok, err)
		}
		work := lock.Context()
		before, renewals := coordKills(t, s), coordRenewals(t, s)
		p.StallAll(faultproxy.ToClient) // the server runs the renewal; its reply is held
		resetCtx, cancel := context.WithCancel(ctxT(t))
		done := make(chan error, 1)
		go func() { _, err := lock.ResetExpiry(resetCtx, time.Minute); done <- err }()
		// The renewal ran on the server (so it was sent, and its reply is held):
		// not merely some reply held (another connection's, say a holder's
		// read that a loaded machine sent late), which could come before the
		// renewal was even handed to a connection.
		eventuallyTrue(t, "the renewal run on the server", func() bool { return coordRenewals(t, s) > renewals })
		waitReplyHeld(t, p)
		cancel()
		waitDone(t, work) // not held from the moment the outcome became unknown
		if st := lock.State(); st == lease.StateHeld {
			t.Fatal("the lock stayed Held although its renewal's outcome is unknown")
		}
		var loss *lease.LossError
		if cause := context.Cause(work); !errors.As(cause, &loss) || loss.Reason != lease.LossRenewalUnknown {
			t.Fatalf("cause %v; want a *lease.LossError, renewal outcome unknown", cause)
		}
		eventuallyTrue(t, "the fence on the server", func() bool { return coordKills(t, s) > before })
		select {
		case err := <-done: // the kill's answer is held: the fence cannot have answered
			t.Fatalf("ResetExpiry returned before its fence answered: %v", err)
		default:
		}
		p.UnstallAll(faultproxy.Both) // the kill's answer arrives
		if err := <-done; !errors.Is(err, lease.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) ||
			errors.Is(err, lease.ErrFencePending) {
			t.Fatalf("ResetExpiry cut off after the send = %v; want an unknown outcome, fenced", err)
		}
		if st := lock.State(); st != lease.StateLost {
			t.Fatalf("state %v once ResetExpiry returned; want Lost (the fence answered)", st)
		}
		if s.srv != nil {
			assertFenceKilledTheRenewalsConnection(t, s)
		}
	})
}

// coordRenewals counts the renewals of a fenced lock s ran (SET … IFEQ, or
// the compare-and-expire script): from a sim node's log; on the real
// server, from INFO commandstats (every EVALSHA and EVAL: compare with a
// count taken before, while nothing else runs a script).
func coordRenewals(t *testing.T, s coordServer) int {
	t.Helper()
	if s.srv != nil {
		n := 0
		for _, e := range s.srv.Log() {
			if isCoordRenewal(e.Args) {
				n++
			}
		}
		return n
	}
	n := 0
	for _, line := range strings.Split(s.exec(t, "INFO", "commandstats"), "\r\n") {
		for _, name := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if rest, ok := strings.CutPrefix(line, name); ok {
				calls, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				n += calls
			}
		}
	}
	return n
}

// isCoordRenewal matches a fenced lock's renewal: SET … IFEQ, or a script
// with one key and two arguments other than the fenced acquisition.
func isCoordRenewal(args []string) bool {
	return strings.EqualFold(args[0], "SET") && len(args) > 3 && strings.EqualFold(args[3], "IFEQ") ||
		strings.EqualFold(args[0], "EVALSHA") && len(args) == 6 && !isFencedScript(args)
}

// assertFenceKilledTheRenewalsConnection checks, on a sim node, that the
// fence named the connection of the last renewal and that no renewal ran
// after it.
func assertFenceKilledTheRenewalsConnection(t *testing.T, s coordServer) {
	t.Helper()
	var renewal, kill int
	var renewedOn int64
	var killedID string
	for i, e := range s.srv.Log() {
		switch {
		case coordIsKill(e.Args):
			kill, killedID = i, e.Args[3]
		case isCoordRenewal(e.Args):
			renewal, renewedOn = i, e.ClientID
		}
	}
	if kill < renewal || killedID != strconv.FormatInt(renewedOn, 10) {
		t.Fatalf("fence at %d of client %s, last renewal at %d on client %d; want the renewal's connection killed after it",
			kill, killedID, renewal, renewedOn)
	}
}

// A keep-alive renewal of a fenced lock that meets a connection reset
// does not lose the lock: it is recovered on a fresh connection (fenced
// first when its outcome is unknown), with the same fencing token.
func caseFencedLockKeepAliveSurvivesAConnectionReset(t *testing.T, tr Transport) {
	forEachCoordServer(t, tr, func(t *testing.T, s coordServer) {
		c, p := proxied(t, tr, s)
		lock, err := c.Acquire(context.Background(), leaseKey, counterKey, time.Second, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		waitRenewed(t, lock)
		for _, conn := range p.Conns() {
			conn.Reset()
		}
		waitRenewed(t, lock)
		waitRenewed(t, lock)
		if err := lock.Context().Err(); err != nil || lock.FencingToken() != 1 {
			t.Fatalf("after the reset: context %v, token %d; want live, 1", context.Cause(lock.Context()), lock.FencingToken())
		}
		if held, err := lock.VerifyStillHeld(ctxT(t)); !held || err != nil {
			t.Fatalf("VerifyStillHeld = %v, %v", held, err)
		}
	})
}

func init() {
	register(
		Case{"FencedLockUncertainRenewalIsFencedOverRealSockets", caseFencedLockUncertainRenewalIsFencedOverRealSockets},
		Case{"FencedLockKeepAliveSurvivesAConnectionReset", caseFencedLockKeepAliveSurvivesAConnectionReset},
	)
}
