package leasesuite

import (
	"bytes"
	"context"
	"errors"
	"github.com/respire-go/respire/lease"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

func caseConcurrentReleasesShareOneDelete(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "DELEX", Gate: gate})
	outcomes := make(chan lease.ReleaseOutcome, 3)
	starter := func() {
		out, err := lock.Release(ctx)
		if err != nil {
			t.Errorf("Release = %v", err)
		}
		outcomes <- out
	}
	go starter()
	waitLog(t, srv, isCommand("DELEX"))
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); starter() }()
	}
	eventually(t, "joiners parked", func() bool { return coreOf(lock).Waiters() == 3 })
	close(gate)
	wg.Wait()
	for range 3 {
		if out := <-outcomes; out != lease.Released {
			t.Fatalf("a releaser got %v; want Released (shared delete)", out)
		}
	}
	if n := count(srv.Log(), "DELEX"); n != 1 {
		t.Fatalf("server saw %d DELEX; want exactly 1", n)
	}
}

func caseJoinerWhoseContextEndsStopsWaitingWhileTheSharedReleaseGoesOn(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "DELEX", Gate: gate})
	starterDone := make(chan lease.ReleaseOutcome, 1)
	go func() { out, _ := lock.Release(ctx); starterDone <- out }()
	waitLog(t, srv, isCommand("DELEX"))
	joinCtx, cancelJoin := context.WithCancel(ctx)
	joinerErr := make(chan error, 1)
	go func() { _, err := lock.Release(joinCtx); joinerErr <- err }()
	eventually(t, "joiner parked", func() bool { return coreOf(lock).Waiters() == 2 })
	cancelJoin()
	if err := <-joinerErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("joiner = %v; want context.Canceled", err)
	}
	select {
	case out := <-starterDone:
		t.Fatalf("starter finished (%v) before its delete was answered", out)
	default:
	}
	close(gate)
	if out := <-starterDone; out != lease.Released {
		t.Fatalf("starter = %v; want Released", out)
	}
}

func caseReleaseCancelledBeforeTheSendLeavesTheLockHeldAndRetryable(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := lock.Release(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Release(cancelled) = %v; want context.Canceled", err)
	}
	if lock.State() != lease.StateHeld {
		t.Fatalf("state %v; want Held", lock.State())
	}
	if out, err := lock.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("retry = %v, %v; want Released", out, err)
	}
	if n := count(srv.Log(), "DELEX"); n != 1 {
		t.Fatalf("%d DELEX; want 1", n)
	}
}

func caseReleaseThatMayHaveReachedTheServerLosesTheLockCancelsKeepAliveAndFences(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "k", time.Minute, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "DELEX", Gate: gate})
	// The kill's answer is held: Release must not return before it
	// (rule FenceBeforeReturn).
	fenceGate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Gate: fenceGate, Match: func(args []string) bool {
		return isKill(sim.Entry{Args: args})
	}})
	letFenceGo := sync.OnceFunc(func() { close(fenceGate) })
	defer letFenceGo()
	releaseCtx, cancel := context.WithCancel(ctx)
	released := make(chan error, 1)
	go func() { _, err := lock.Release(releaseCtx); released <- err }()
	del := waitLog(t, srv, isCommand("DELEX"))
	cancel()
	waitLog(t, srv, isKill) // the fence ran; its answer is held
	select {
	case err := <-released:
		t.Fatalf("Release returned before its fence answered: %v", err)
	default:
	}
	letFenceGo()
	err = <-released
	if !errors.Is(err, context.Canceled) || !errors.Is(err, conn.ErrOutcomeUnknown) || errors.Is(err, lease.ErrFencePending) {
		t.Fatalf("Release = %v; want the cancellation, classified uncertain, once fenced", err)
	}
	if cause := context.Cause(lock.Context()); !errors.Is(cause, lease.ErrOwnershipLost) {
		t.Fatalf("keep-alive cause %v; want ErrOwnershipLost", cause)
	}
	if st := lock.State(); st == lease.StateHeld {
		t.Fatal("the lock is still Held after its delete may have run")
	}
	kill := waitLog(t, srv, isKill)
	if kill.Seq < del.Seq {
		t.Fatalf("CLIENT KILL … ADDR (seq %d) before the DELEX (seq %d)", kill.Seq, del.Seq)
	}
	eventually(t, "Lost once the fence answered", func() bool { return lock.State() == lease.StateLost })
	if out, err := lock.Release(ctx); out != lease.NotOwned || err != nil {
		t.Fatalf("later Release = %v, %v; want NotOwned", out, err)
	}
	if err := lock.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
}

func caseReleaseServerErrorKeepsTheLockHeldAndRetryable(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "DELEX", Error: "NOPERM release denied", Times: 3})
	for round := range 2 {
		if _, err := lock.Release(ctx); !errors.Is(err, conn.ErrServerReply) {
			t.Fatalf("round %d: Release = %v; want the server error", round, err)
		}
		if lock.State() != lease.StateHeld {
			t.Fatalf("round %d: state %v; want Held", round, lock.State())
		}
	}
	if err := lock.Close(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("Close = %v; want the server error to surface", err)
	}
	if out, err := lock.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("Release after the fault = %v, %v", out, err)
	}
}

func caseCloseSwallowsConnectionErrors(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	lock, err := locks.Acquire(ctxT(t), "k", time.Minute, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Command: "DELEX"})
	if err := lock.Close(); err != nil {
		t.Fatalf("Close = %v; want connection loss swallowed", err)
	}
	if lock.State() != lease.StateLost {
		t.Fatalf("state %v; want Lost (the delete's outcome is unknown)", lock.State())
	}
	other, err := locks.Acquire(ctxT(t), "other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	locks.Close()
	if err := other.Close(); err != nil {
		t.Fatalf("Close after Locks.Close = %v; want swallowed", err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
}

// warnings counts WARN records.
type warnings struct {
	mu  sync.Mutex
	buf bytes.Buffer
	n   int
}

func (w *warnings) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, []byte("level=WARN")) {
		w.n++
	}
	return w.buf.Write(p)
}

func caseReleaseWithoutClientPermissionIsUnfencedAndWarnsOncePerLocks(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	srv.SetUser("locker", "lockerpw", "set", "get", "delex")
	w := &warnings{}
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "locker", "lockerpw", true),
		lease.WithLogger(slog.New(slog.NewTextHandler(w, nil))))
	ctx := ctxT(t)
	for _, key := range []string{"a", "b"} {
		lock, err := locks.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := lock.Release(ctx); out != lease.Released || err != nil {
			t.Fatalf("Release(%s) = %v, %v; want Released unfenced", key, out, err)
		}
	}
	if n := count(srv.Log(), "DELEX"); n != 2 {
		t.Fatalf("%d DELEX; want 2", n)
	}
	if w.n != 1 || strings.Contains(w.buf.String(), "redacted") {
		t.Fatalf("%d warnings; want exactly 1:\n%s", w.n, w.buf.String())
	}
}

// gatedCancel is a context whose second Err call — the transport's last
// check before it writes a command — reports the cancellation once the test
// lets it, so "cancelled just before the send" is deterministic.
type gatedCancel struct {
	context.Context
	mu      sync.Mutex
	calls   int
	checked chan struct{} // closed at the second Err call
	release chan struct{} // the test closes it to let that call return
	done    chan struct{}
}

func newGatedCancel(parent context.Context) *gatedCancel {
	return &gatedCancel{Context: parent, checked: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
}

func (c *gatedCancel) Done() <-chan struct{} { return c.done }

func (c *gatedCancel) Err() error {
	c.mu.Lock()
	c.calls++
	n := c.calls
	c.mu.Unlock()
	switch {
	case n == 1:
		return nil
	case n == 2:
		close(c.checked)
		<-c.release
		close(c.done)
	}
	return context.Canceled
}

func caseStarterCancelledBeforeTheSendHandsTheReleaseToAJoiner(t *testing.T, tr Transport) {
	srv, locks := managedSim(t, tr, sim.Redis84)
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.VerifyStillHeld(ctx); err != nil { // open the session first
		t.Fatal(err)
	}
	starterCtx := newGatedCancel(ctx)
	starterErr := make(chan error, 1)
	go func() { _, err := lock.Release(starterCtx); starterErr <- err }()
	<-starterCtx.checked
	joined := make(chan lease.ReleaseOutcome, 1)
	go func() {
		out, err := lock.Release(ctx)
		if err != nil {
			t.Errorf("joiner = %v", err)
		}
		joined <- out
	}()
	eventually(t, "joiner parked", func() bool { return coreOf(lock).Waiters() == 2 })
	close(starterCtx.release)
	if err := <-starterErr; !errors.Is(err, context.Canceled) || !errors.Is(err, conn.ErrNotSubmitted) {
		t.Fatalf("starter = %v; want its cancellation, not submitted", err)
	}
	if out := <-joined; out != lease.Released {
		t.Fatalf("joiner = %v; want Released by its own attempt", out)
	}
	if n := count(srv.Log(), "DELEX"); n != 1 {
		t.Fatalf("%d DELEX; want exactly 1", n)
	}
}

func caseUncertainReleaseWithoutClientPermissionIsLostWithoutAFence(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	srv.SetUser("locker", "lockerpw", "set", "get", "delex")
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "locker", "lockerpw", true))
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "DELEX", Gate: gate})
	releaseCtx, cancel := context.WithCancel(ctx)
	result := make(chan error, 1)
	go func() { _, err := lock.Release(releaseCtx); result <- err }()
	waitLog(t, srv, isCommand("DELEX"))
	cancel()
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("Release = %v; want context.Canceled", err)
	}
	if lock.State() != lease.StateLost {
		t.Fatalf("state %v; want Lost", lock.State())
	}
	for _, e := range srv.Log() {
		if strings.EqualFold(e.Args[0], "CLIENT") && len(e.Args) > 1 && strings.EqualFold(e.Args[1], "KILL") {
			t.Fatalf("sent %v although CLIENT is not permitted", e.Args)
		}
	}
}

func init() {
	register(
		Case{"ConcurrentReleasesShareOneDelete", caseConcurrentReleasesShareOneDelete},
		Case{"JoinerWhoseContextEndsStopsWaitingWhileTheSharedReleaseGoesOn", caseJoinerWhoseContextEndsStopsWaitingWhileTheSharedReleaseGoesOn},
		Case{"ReleaseCancelledBeforeTheSendLeavesTheLockHeldAndRetryable", caseReleaseCancelledBeforeTheSendLeavesTheLockHeldAndRetryable},
		Case{"ReleaseThatMayHaveReachedTheServerLosesTheLockCancelsKeepAliveAndFences", caseReleaseThatMayHaveReachedTheServerLosesTheLockCancelsKeepAliveAndFences},
		Case{"ReleaseServerErrorKeepsTheLockHeldAndRetryable", caseReleaseServerErrorKeepsTheLockHeldAndRetryable},
		Case{"CloseSwallowsConnectionErrors", caseCloseSwallowsConnectionErrors},
		Case{"ReleaseWithoutClientPermissionIsUnfencedAndWarnsOncePerLocks", caseReleaseWithoutClientPermissionIsUnfencedAndWarnsOncePerLocks},
		Case{"StarterCancelledBeforeTheSendHandsTheReleaseToAJoiner", caseStarterCancelledBeforeTheSendHandsTheReleaseToAJoiner},
		Case{"UncertainReleaseWithoutClientPermissionIsLostWithoutAFence", caseUncertainReleaseWithoutClientPermissionIsLostWithoutAFence},
	)
}
