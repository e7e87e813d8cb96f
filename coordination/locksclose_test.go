package coordination

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// privateLocks is Locks and a Coordinator on node (no prefix); the test
// closes the Locks itself (Close is idempotent: the cleanup only makes
// sure).
func privateLocks(t *testing.T, node realNode) (*lease.Locks, *Coordinator) {
	t.Helper()
	locks, err := lease.New(lockClient(t, []string{node.addr}, node.password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(locks.Close)
	c, err := New(locks)
	if err != nil {
		t.Fatal(err)
	}
	return locks, c
}

// waitBlocked waits until node reports n blocked clients (a WAIT pending).
func waitBlocked(t *testing.T, node realNode, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d blocked clients", n), 10*time.Second, func() error {
		if got := infoField(node.must(t, "INFO", "clients"), "blocked_clients"); got != fmt.Sprint(n) {
			return fmt.Errorf("blocked_clients:%s", got)
		}
		return nil
	})
}

// TestBoundedLocksClose_CloseCutsOffAWaitThatCannotBeSatisfied: a private
// standalone server (no replica, so WAIT 1 20000 waits out its 20 s) and a
// WithReplicas acquisition blocked in that WAIT. Locks.Close must not wait
// it out (it took 19 s): it closes the acquisition's dedicated connection,
// the acquisition fails with an unknown outcome, the lease its script took
// is cleaned up before Close returns, and nothing is left blocked on the
// server.
func TestBoundedLocksClose_CloseCutsOffAWaitThatCannotBeSatisfied(t *testing.T) {
	node := startPrivateServer(t, "standalone")
	node.must(t, "SCRIPT", "LOAD", conn.FencedAcquireScript) // EVALSHA runs: the script's outcome is what WAIT leaves unknown
	locks, c := privateLocks(t, node)
	failed := make(chan error, 1)
	go func() {
		attempt, err := c.TryAcquire(context.Background(), leaseKey, counterKey, time.Minute, WithReplicas(1, 20*time.Second))
		if attempt.Acquired() {
			err = fmt.Errorf("acquired %v with no replica", attempt.Lock())
		}
		failed <- err
	}()
	waitBlocked(t, node, 1)
	start := time.Now()
	locks.Close()
	elapsed := time.Since(start)
	t.Logf("Locks.Close with a 20s WAIT pending returned after %v", elapsed.Round(time.Millisecond))
	if elapsed > 5*time.Second {
		t.Fatalf("Locks.Close took %v with a WAIT pending; want it cut off (the WAIT had 20s to go)", elapsed)
	}
	var err error
	select { // cut off by Close: its caller is only returning
	case err = <-failed:
	case <-time.After(5 * time.Second):
		t.Fatal("the acquisition Locks.Close cut off did not return")
	}
	if !errors.Is(err, lease.ErrOutcomeUnknown) && !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("the acquisition cut off by Close = %v; want an unknown outcome (or not replicated)", err)
	}
	t.Log(err)
	if got := node.must(t, "EXISTS", leaseKey); got != ":0" {
		t.Fatalf("EXISTS lease = %s after Locks.Close; want :0 (cleaned up before Close returned)", got)
	}
	waitBlocked(t, node, 0) // the server let go of the closed connection's WAIT
	if _, err := c.TryAcquire(context.Background(), leaseKey, counterKey, time.Minute); !errors.Is(err, lease.ErrClosed) {
		t.Fatalf("TryAcquire after Close = %v; want ErrClosed", err)
	}
}

// TestBoundedLocksClose_CloseContextReturnsAtItsEndAndCloseWaitsForTheRest:
// a release in flight on a stopped server (SIGSTOP) makes the shutdown
// slow: closing the release's socket leaves its outcome unknown, and its
// fence cannot reach the server. CloseContext returns when its ctx ends,
// with the ctx's cause, while the shutdown goes on; a later Close waits for
// it, and once Close returns the release has settled (lost, fenced or not)
// and nothing of the Locks runs. The whole shutdown stays within Close's
// documented bound.
func TestBoundedLocksClose_CloseContextReturnsAtItsEndAndCloseWaitsForTheRest(t *testing.T) {
	node := startPrivateServer(t, "standalone")
	locks, c := privateLocks(t, node)
	lock, err := c.Acquire(context.Background(), leaseKey, counterKey, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := lock.ResetExpiry(context.Background(), time.Minute); !ok || err != nil { // the session's CLIENT KILL probe, done
		t.Fatalf("ResetExpiry = %v, %v", ok, err)
	}
	node.signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { _ = syscall.Kill(node.pid(t), syscall.SIGCONT) })
	released := make(chan error, 1)
	go func() {
		_, err := lock.Release(context.Background())
		released <- err
	}()
	// In flight means written: its bytes wait unread in the stopped
	// server's socket (a release still queued in the client would be
	// "not sent" when the shutdown closes the socket, and settle at once).
	// A release script is far longer than a keep-alive's PING.
	eventually(t, "the release in flight", 10*time.Second, func() error {
		if st := lock.State(); st != lease.StateReleasing {
			return fmt.Errorf("state %v", st)
		}
		if n := unreadByServer(t, node); n < 60 {
			return fmt.Errorf("%d bytes unread by the stopped server", n)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = locks.CloseContext(ctx)
	returned := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CloseContext with a release stuck on a stopped server = %v; want context.DeadlineExceeded", err)
	}
	t.Logf("CloseContext returned after %v: %v", returned.Round(time.Millisecond), err)
	if returned > 2*time.Second {
		t.Fatalf("CloseContext returned %v after a 300ms ctx", returned)
	}
	if _, err := c.TryAcquire(context.Background(), "other", counterKey, time.Minute); !errors.Is(err, lease.ErrClosed) {
		t.Fatalf("TryAcquire after CloseContext = %v; want ErrClosed", err)
	}
	locks.Close()
	total := time.Since(start)
	t.Logf("the shutdown ended %v after CloseContext began", total.Round(time.Millisecond))
	if bound := lease.CloseGrace + time.Second + lease.FenceTimeout + 2*time.Second; total > bound {
		t.Fatalf("the shutdown took %v; want it within Close's bound (about %v)", total, bound)
	}
	if st := lock.State(); st == lease.StateReleasing || st == lease.StateHeld {
		t.Fatalf("Close returned with the release in flight not settled (state %v)", st)
	}
	select { // settled: its caller is only returning
	case err := <-released:
		if !errors.Is(err, lease.ErrOutcomeUnknown) {
			t.Fatalf("the release cut off by the shutdown = %v; want an unknown outcome", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the release's caller did not return after Close")
	}
	if err := locks.CloseContext(ctx); err != nil {
		t.Fatalf("CloseContext after the shutdown ended = %v; want nil even with an ended ctx", err)
	}
}
