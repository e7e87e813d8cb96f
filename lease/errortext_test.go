package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// failingCall is one call that must fail, with the sentinels its error
// must match.
type failingCall struct {
	name string
	want []error
	call func() error
}

// checkFailingCalls runs every call: its error has exactly one "lease: "
// prefix, names no inner package and matches each wanted sentinel.
func checkFailingCalls(t *testing.T, calls []failingCall) {
	t.Helper()
	for _, c := range calls {
		err := c.call()
		assertOneLeasePrefix(t, c.name, err)
		for _, want := range c.want {
			if !errors.Is(err, want) {
				t.Errorf("%s = %v; want it to match %q", c.name, err, want)
			}
		}
	}
}

// TestErrorTexts_BadInputErrorsHaveOneLeasePrefixAndMatchTheirSentinel:
// every call refused for bad input — managed, raw-token and constructors —
// and every refusal of the handle's state (ErrKeepAliveActive, ErrNotHeld,
// ErrNotAcquired) reads "lease: …" once, names no inner package
// (statemachine:, conn:, respire:) and matches its sentinel.
func TestErrorTexts_BadInputErrorsHaveOneLeasePrefixAndMatchTheirSentinel(t *testing.T) {
	_, locks := managedSim(t, sim.Redis84)
	ctx := ctxT(t)
	held, err := locks.Acquire(ctx, "held", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := held.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	released, err := locks.Acquire(ctx, "released", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}
	noErr := func(_ any, err error) error { return err }
	noErr3 := func(_ any, _ bool, err error) error { return err }
	tooShort := time.Millisecond // not longer than the default drift margin (2ms + 1%)
	tryAcquire := func(key string, ttl time.Duration, opts ...AcquireOption) func() error {
		return func() error { return noErr(locks.TryAcquire(ctx, key, ttl, opts...)) }
	}
	acquire := func(key string, ttl time.Duration, opts ...AcquireOption) func() error {
		return func() error { return noErr(locks.Acquire(ctx, key, ttl, opts...)) }
	}
	checkFailingCalls(t, []failingCall{
		{"TryAcquire(empty key)", []error{ErrEmptyKey}, tryAcquire("", time.Minute)},
		{"TryAcquire(zero lease)", []error{ErrInvalidTTL}, tryAcquire("k", 0)},
		{"TryAcquire(negative lease)", []error{ErrInvalidTTL}, tryAcquire("k", -time.Second)},
		{"TryAcquire(beyond MaxTTL)", []error{ErrInvalidTTL}, tryAcquire("k", MaxTTL+time.Millisecond)},
		{"TryAcquire(within the drift margin)", []error{ErrInvalidTTL}, tryAcquire("k", tooShort)},
		{"TryAcquire(WithWait(-1))", []error{ErrInvalidOption}, tryAcquire("k", time.Minute, WithWait(-1))},
		{"TryAcquire(WithRetryEvery(0))", []error{ErrInvalidOption}, tryAcquire("k", time.Minute, WithRetryEvery(0))},
		{"Acquire(empty key)", []error{ErrEmptyKey}, acquire("", time.Minute)},
		{"Acquire(zero lease)", []error{ErrInvalidTTL}, acquire("k", 0)},
		{"Acquire(within the drift margin)", []error{ErrInvalidTTL}, acquire("k", tooShort, WithKeepAlive())},
		{"Acquire(WithRetryEvery(-1))", []error{ErrInvalidOption}, acquire("k", time.Minute, WithRetryEvery(-1))},
		{"Acquire(held elsewhere)", []error{ErrNotAcquired}, acquire("held", time.Minute)},
		{"Acquire(held elsewhere, WithWait)", []error{ErrNotAcquired}, acquire("held", time.Minute, WithWait(time.Millisecond))},
		{"Lock.KeepAlive(a second one)", []error{ErrKeepAliveActive}, func() error { return noErr(held.KeepAlive(ctx)) }},
		{"Lock.KeepAlive(released)", []error{ErrNotHeld}, func() error { return noErr(released.KeepAlive(ctx)) }},
		{"Lock.ResetExpiry(zero lease)", []error{ErrInvalidTTL}, func() error { return noErr(held.ResetExpiry(ctx, 0)) }},
		{"Lock.ResetExpiry(within the drift margin)", []error{ErrInvalidTTL}, func() error { return noErr(held.ResetExpiry(ctx, tooShort)) }},
		{"Locks.TryTake(empty key)", []error{ErrEmptyKey}, func() error { return noErr(locks.TryTake(ctx, "", tok("me"), time.Minute)) }},
		{"Locks.TryTake(empty token)", []error{ErrEmptyToken}, func() error { return noErr(locks.TryTake(ctx, "k", Token{}, time.Minute)) }},
		{"Locks.TryTake(zero lease)", []error{ErrInvalidTTL}, func() error { return noErr(locks.TryTake(ctx, "k", tok("me"), 0)) }},
		{"Locks.ResetExpiry(empty key)", []error{ErrEmptyKey}, func() error { return noErr(locks.ResetExpiry(ctx, "", tok("me"), time.Minute)) }},
		{"Locks.ResetExpiry(empty token)", []error{ErrEmptyToken}, func() error { return noErr(locks.ResetExpiry(ctx, "k", Token{}, time.Minute)) }},
		{"Locks.ResetExpiry(beyond MaxTTL)", []error{ErrInvalidTTL}, func() error { return noErr(locks.ResetExpiry(ctx, "k", tok("me"), MaxTTL+1)) }},
		{"Locks.Release(empty key)", []error{ErrEmptyKey}, func() error { return noErr(locks.Release(ctx, "", tok("me"))) }},
		{"Locks.Release(empty token)", []error{ErrEmptyToken}, func() error { return noErr(locks.Release(ctx, "k", Token{})) }},
		{"Locks.OwnerToken(empty key)", []error{ErrEmptyKey}, func() error { return noErr3(locks.OwnerToken(ctx, "")) }},
		{"New(nil client)", []error{ErrNilClient}, func() error { return noErr(New(nil)) }},
		{"New(WithCommandTimeout(-1))", []error{ErrInvalidOption}, func() error {
			return noErr(New(newClient(t, []string{"127.0.0.1:1"}, "", "", false), WithCommandTimeout(-1)))
		}},
		{"New(WithDriftMargin(0.9, 0))", []error{ErrInvalidOption}, func() error {
			return noErr(New(newClient(t, []string{"127.0.0.1:1"}, "", "", false), WithDriftMargin(0.9, 0)))
		}},
		{"New(WithIdleCheck(-1))", []error{ErrInvalidOption}, func() error {
			return noErr(New(newClient(t, []string{"127.0.0.1:1"}, "", "", false), WithIdleCheck(-1)))
		}},
		{"TokenFromString(invalid UTF-8)", []error{ErrInvalidToken}, func() error { return noErr(TokenFromString("\xff")) }},
	})
}

// TestErrorTexts_CallsOnAClosedLocksMatchErrClosedWithOneLeasePrefix: after
// Locks.Close every call — acquisitions, a held lock's methods, the
// raw-token API — fails with an error matching ErrClosed and
// ErrNotSubmitted that reads "lease: …" once.
func TestErrorTexts_CallsOnAClosedLocksMatchErrClosedWithOneLeasePrefix(t *testing.T) {
	_, locks := managedSim(t, sim.Redis84)
	ctx := ctxT(t)
	held, err := locks.Acquire(ctx, "held", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	locks.Close()
	closed := []error{ErrClosed, ErrNotSubmitted}
	noErr := func(_ any, err error) error { return err }
	checkFailingCalls(t, []failingCall{
		{"TryAcquire", closed, func() error { return noErr(locks.TryAcquire(ctx, "k", time.Minute)) }},
		{"Acquire", closed, func() error { return noErr(locks.Acquire(ctx, "k", time.Minute)) }},
		{"Acquire(WithKeepAlive)", closed, func() error { return noErr(locks.Acquire(ctx, "k", time.Minute, WithKeepAlive())) }},
		{"Lock.KeepAlive", closed, func() error { return noErr(held.KeepAlive(ctx)) }},
		{"Lock.ResetExpiry", closed, func() error { return noErr(held.ResetExpiry(ctx, time.Minute)) }},
		{"Lock.Release", closed, func() error { return noErr(held.Release(ctx)) }},
		{"Locks.TryTake", closed, func() error { return noErr(locks.TryTake(ctx, "k", tok("me"), time.Minute)) }},
		{"Locks.ResetExpiry", closed, func() error { return noErr(locks.ResetExpiry(ctx, "k", tok("me"), time.Minute)) }},
		{"Locks.Release", closed, func() error { return noErr(locks.Release(ctx, "k", tok("me"))) }},
		{"Locks.OwnerToken", closed, func() error { _, _, err := locks.OwnerToken(ctx, "k"); return err }},
	})
	if err := held.Close(); err != nil {
		t.Fatalf("Close on a closed Locks = %v; want nil (swallowed)", err)
	}
}

// TestErrorTexts_TransportErrorsMatchTheLeaseSentinels: the errors calls
// return for what happened on the wire match lease's own sentinels — an
// answer that never came ErrOutcomeUnknown, an error reply ErrServerReply
// (with the server's reply behind it: *conn.ServerError on the engine's own client, the client's type on an adapter's), a reply proving the command
// did not run ErrDidNotRun — each read with one "lease: " prefix.
func TestErrorTexts_TransportErrorsMatchTheLeaseSentinels(t *testing.T) {
	srv, locks := managedSim(t, sim.Redis84)
	ctx := ctxT(t)
	acquire := func(key string) *Lock {
		t.Helper()
		lock, err := locks.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = lock.Close() })
		return lock
	}

	refused := acquire("refused")
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "DELEX", Error: "ERR injected refusal"})
	_, err := refused.Release(ctx)
	assertOneLeasePrefix(t, "Release refused", err)
	var reply *conn.ServerError
	if !errors.Is(err, ErrServerReply) || errors.Is(err, ErrDidNotRun) || errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &reply) {
		t.Errorf("Release refused with an error reply = %v; want ErrServerReply with the server's *conn.ServerError", err)
	}
	if refused.State() != StateHeld {
		t.Errorf("state %v after a refused release; want Held", refused.State())
	}

	loading := acquire("loading")
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Match: hasIFEQ, Error: "LOADING Redis is loading the dataset in memory"})
	_, err = loading.ResetExpiry(ctx, time.Minute)
	assertOneLeasePrefix(t, "ResetExpiry on a loading server", err)
	if !errors.Is(err, ErrDidNotRun) || !errors.Is(err, ErrServerReply) || errors.Is(err, ErrOutcomeUnknown) {
		t.Errorf("ResetExpiry on a loading server = %v; want ErrDidNotRun and ErrServerReply", err)
	}

	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Error: "ERR injected raw refusal"})
	_, err = locks.TryTake(ctx, "raw", tok("me"), time.Minute)
	assertOneLeasePrefix(t, "TryTake refused", err)
	if !errors.Is(err, ErrServerReply) || !errors.As(err, &reply) {
		t.Errorf("TryTake refused with an error reply = %v; want ErrServerReply", err)
	}

	unanswered := acquire("unanswered")
	gate, fenceGate := make(chan struct{}), make(chan struct{})
	defer close(gate)
	defer close(fenceGate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "DELEX", Gate: gate})
	// The fence's answer is held too, so that Release returns while it is
	// pending (see TestErrorTexts_AnInterruptedCommandMatchesErrOutcomeUnknownEvenOnceFenced).
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "CLIENT", Gate: fenceGate,
		Match: func(args []string) bool {
			return len(args) >= 6 && strings.EqualFold(args[1], "KILL") && strings.EqualFold(args[4], "ADDR")
		}})
	releaseCtx, cancel := context.WithCancel(ctx)
	released := make(chan error, 1)
	go func() { _, err := unanswered.Release(releaseCtx); released <- err }()
	waitLog(t, srv, isCommand("DELEX", "unanswered"))
	cancel()
	err = <-released
	assertOneLeasePrefix(t, "Release with no answer", err)
	if !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrNotSubmitted) || errors.Is(err, ErrServerReply) {
		t.Errorf("Release with no answer = %v; want ErrOutcomeUnknown only", err)
	}
}

// TestErrorTexts_AnInterruptedCommandMatchesErrOutcomeUnknownEvenOnceFenced:
// a ResetExpiry or Release whose ctx ends after its command reached the
// server returns an error matching ErrOutcomeUnknown, also when the fence
// of its connection answers before the caller has stopped waiting (then
// without ErrFencePending). Repeated, as that ordering is a race.
func TestErrorTexts_AnInterruptedCommandMatchesErrOutcomeUnknownEvenOnceFenced(t *testing.T) {
	srv, locks := managedSim(t, sim.Redis84, WithIdleCheck(time.Hour))
	ctx := ctxT(t)
	for i := range 40 {
		key := fmt.Sprintf("k%d", i)
		lock, err := locks.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		command, call := "SET", func(ctx context.Context) error { _, err := lock.ResetExpiry(ctx, time.Minute); return err }
		if i%2 == 1 {
			command, call = "DELEX", func(ctx context.Context) error { _, err := lock.Release(ctx); return err }
		}
		sent := func(args []string) bool {
			return strings.EqualFold(args[0], command) && args[1] == key && (command != "SET" || hasIFEQ(args))
		}
		gate := make(chan struct{})
		srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: command, Gate: gate, Match: sent})
		callCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- call(callCtx) }()
		waitLog(t, srv, func(e sim.Entry) bool { return sent(e.Args) })
		cancel()
		err = <-done
		close(gate)
		locks.driver().WaitIdle() // the fence has answered: the next lock gets a fresh session
		if !errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("try %d: %s interrupted after the send = %v (state %v); want ErrOutcomeUnknown", i, command, err, lock.State())
		}
	}
}
