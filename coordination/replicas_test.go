package coordination

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

func TestWithReplicasIsValidatedBeforeAnythingIsSent(t *testing.T) {
	srv, c := simCoordinator(t, sim.Redis70)
	srv.ResetLog()
	for _, opt := range []lease.AcquireOption{WithReplicas(0, time.Second), WithReplicas(-1, time.Second),
		WithReplicas(1, 0), WithReplicas(1, -time.Millisecond)} {
		attempt, err := c.TryAcquire(ctxT(t), leaseKey, counterKey, time.Minute, opt)
		if !errors.Is(err, lease.ErrInvalidOption) || attempt.Acquired() {
			t.Errorf("TryAcquire = %v, %v; want lease.ErrInvalidOption", attempt.Acquired(), err)
		}
	}
	if log := srv.Log(); len(log) != 0 {
		t.Fatalf("commands sent by invalid calls: %v", log)
	}
}

// assertNotReplicated checks err is a *NotReplicatedError with the lease
// released and the counter incremented to wantCounter.
func assertNotReplicated(t *testing.T, s server, err error, acknowledged int, wantCounter string) *NotReplicatedError {
	t.Helper()
	var nr *NotReplicatedError
	if !errors.Is(err, ErrNotReplicated) || !errors.As(err, &nr) {
		t.Fatalf("error = %v; want a *NotReplicatedError", err)
	}
	if nr.Acknowledged != acknowledged || nr.Required != 1 || !nr.Released || nr.Key != leaseKey {
		t.Fatalf("NotReplicatedError = %+v; want %d of 1 acknowledged, released", nr, acknowledged)
	}
	if got := s.exec(t, "EXISTS", s.prefix+leaseKey); got != ":0" {
		t.Fatalf("lease EXISTS = %s; want :0 (released)", got)
	}
	if got := s.exec(t, "GET", s.prefix+counterKey); got != wantCounter {
		t.Fatalf("counter = %q; want %s (the refused token stays spent)", got, wantCounter)
	}
	return nr
}

// On a server without replicas (every simulator profile; the real
// standalone redis-server 7.0) WAIT 1 answers 0: the token is refused, the
// lease released, the counter stays incremented, and the next owner gets
// the following token.
func TestFencingCounter_WaitOnAServerWithoutReplicasRefusesTheToken(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		c := newCoordinator(t, s.locksClient(t), s.prefix)
		const timeout = 200 * time.Millisecond
		start := time.Now()
		attempt, err := c.TryAcquire(ctxT(t), leaseKey, counterKey, time.Minute, WithReplicas(1, timeout))
		elapsed := time.Since(start)
		if attempt.Acquired() {
			t.Fatal("acquired although no replica acknowledged")
		}
		nr := assertNotReplicated(t, s, err, 0, "1")
		t.Logf("%v (after %v)", nr, elapsed.Round(time.Millisecond))
		if s.srv == nil && elapsed < timeout {
			t.Fatalf("refused after %v; want WAIT to have waited its %v", elapsed, timeout)
		}
		if s.srv != nil {
			assertWaitFollowedTheScriptOnItsConnection(t, s.srv.Log())
		}
		lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
		if err != nil || lock.FencingToken() != 2 {
			t.Fatalf("next Acquire without WithReplicas = %v, %v; want token 2", lock, err)
		}
		_ = lock.Close()
	})
}

// assertWaitFollowedTheScriptOnItsConnection checks that every fenced
// script in log is followed, on its connection, by WAIT.
func assertWaitFollowedTheScriptOnItsConnection(t *testing.T, log []sim.Entry) {
	t.Helper()
	scripts := 0
	for i, e := range log {
		if !isFencedScript(e.Args) {
			continue
		}
		scripts++
		next := -1
		for j := i + 1; j < len(log) && next < 0; j++ {
			if log[j].ClientID == e.ClientID {
				next = j
			}
		}
		if next < 0 || !strings.EqualFold(log[next].Args[0], "WAIT") {
			t.Fatalf("the fenced script (seq %d, client %d) was not followed by WAIT on its connection: %v", e.Seq, e.ClientID, log)
		}
	}
	if scripts == 0 {
		t.Fatal("no fenced script in the log")
	}
}

func TestFencingCounter_FailedWaitRefusesTheTokenAndReleases(t *testing.T) {
	srv, c := simCoordinator(t, sim.Valkey90)
	s := server{name: "valkey-9.0", srv: srv, client: newClient(t, []string{srv.Addr()}, simPassword)}
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "WAIT", Error: "ERR refused by the test"})
	_, err := c.TryAcquire(ctxT(t), leaseKey, counterKey, time.Minute, WithReplicas(1, time.Second))
	nr := assertNotReplicated(t, s, err, -1, "1")
	if !errors.Is(err, conn.ErrServerReply) || !errors.Is(err, lease.ErrServerReply) || nr.Err == nil {
		t.Fatalf("error = %v; want it to carry WAIT's error reply", err)
	}
}

// A connection lost during WAIT, after the script's reply arrived, leaves
// the increment's replication unknown: that is "not replicated", and the
// lease is released (on another connection: the script's reply is in).
func TestFencingCounter_UncertainWaitAfterTheScriptIsNotReplicated(t *testing.T) {
	srv, c := simCoordinator(t, sim.Redis84)
	s := server{name: "redis-8.4", srv: srv, client: newClient(t, []string{srv.Addr()}, simPassword)}
	srv.Inject(sim.Fault{Kind: sim.DropBeforeExec, Command: "WAIT"})
	ctx, cancel := context.WithCancel(context.Background()) // no deadline: rueidis keeps the script's reply
	defer cancel()
	_, err := c.TryAcquire(ctx, leaseKey, counterKey, time.Minute, WithReplicas(1, time.Second))
	assertNotReplicated(t, s, err, -1, "1")
	if !errors.Is(err, conn.ErrOutcomeUnknown) || !errors.Is(err, lease.ErrOutcomeUnknown) {
		t.Fatalf("error = %v; want it to carry the uncertain WAIT", err)
	}
	if n := fencedScripts(srv.Log()); n != 1 {
		t.Fatalf("fenced scripts sent = %d; want 1 (never replayed)", n)
	}
}

// The WAIT count is compared with n: at least n hands the token out, fewer
// refuses it. (The simulator has no replicas: the server answers WAIT with
// the count the test scripts.)
func TestFencingCounter_WaitCountBelowNRefusesAndAtLeastNHandsOut(t *testing.T) {
	for _, tc := range []struct {
		n, acked int
		acquired bool
	}{{1, 1, true}, {2, 3, true}, {2, 1, false}, {3, 0, false}} {
		srv, c := simCoordinator(t, sim.Valkey81)
		s := server{name: "valkey-8.1", srv: srv, client: newClient(t, []string{srv.Addr()}, simPassword)}
		srv.Inject(sim.Fault{Kind: sim.ReplaceReply, Command: "WAIT", Reply: fmt.Sprintf(":%d\r\n", tc.acked)})
		lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute, WithReplicas(tc.n, 50*time.Millisecond))
		if tc.acquired {
			if err != nil || lock.FencingToken() != 1 {
				t.Fatalf("WithReplicas(%d) with %d acknowledged = %v, %v; want token 1", tc.n, tc.acked, lock, err)
			}
			if ok, err := lock.ResetExpiry(ctxT(t), time.Minute); !ok || err != nil {
				t.Fatalf("ResetExpiry on the key's session = %v, %v", ok, err)
			}
			_ = lock.Close()
			continue
		}
		var nr *NotReplicatedError
		if !errors.As(err, &nr) || nr.Acknowledged != tc.acked || nr.Required != tc.n || !nr.Released {
			t.Fatalf("WithReplicas(%d) with %d acknowledged = %v; want NotReplicatedError", tc.n, tc.acked, err)
		}
		if got := s.exec(t, "EXISTS", leaseKey); got != ":0" {
			t.Fatalf("lease EXISTS = %s; want :0", got)
		}
	}
}

func TestFencingCounter_ContendedAcquisitionWithReplicasIsNotAnError(t *testing.T) {
	_, c := simCoordinator(t, sim.Redis70)
	holder, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	attempt, err := c.TryAcquire(ctxT(t), leaseKey, counterKey, time.Minute, WithReplicas(1, 20*time.Millisecond))
	if err != nil || attempt.Acquired() {
		t.Fatalf("contended TryAcquire = %v, %v; want not acquired, no error", attempt.Acquired(), err)
	}
}

func TestNotReplicatedErrorDescribesTheOutcome(t *testing.T) {
	counted := &NotReplicatedError{Key: "k", Required: 2, Timeout: time.Second, Acknowledged: 1, Released: true}
	if msg := counted.Error(); !strings.Contains(msg, "1 of 2 replicas") || !strings.Contains(msg, "lease released") ||
		!strings.Contains(msg, "counter stays incremented") {
		t.Errorf("Error() = %q", msg)
	}
	cause := errors.New("boom")
	failed := &NotReplicatedError{Key: "k", Required: 1, Timeout: time.Second, Acknowledged: -1, Err: cause}
	if !errors.Is(failed, ErrNotReplicated) || !errors.Is(failed, cause) || !strings.Contains(failed.Error(), "expires with its TTL") {
		t.Errorf("failed WAIT error = %q; want it to match ErrNotReplicated and its cause", failed.Error())
	}
}
