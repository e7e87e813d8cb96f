package lease

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// Replies that must surface as errors after exactly one command.
var noFallbackReplies = []string{
	"NOPERM command denied",
	"ERR syntax error",
	"ERR unknown command 'another', with args beginning with: ",
	"ERR unknown command 'DELEX'",
	"WRONGTYPE Operation against a key holding the wrong kind of value",
	"ERR arbitrary server failure",
	"ERR proxy reported syntax error after forwarding",
}

func TestReleaseNeverFallsBackOnOtherErrors(t *testing.T) {
	for _, profile := range sim.Profiles {
		for _, text := range noFallbackReplies {
			t.Run(string(profile)+"/"+text, func(t *testing.T) {
				srv := startSim(t, sim.Config{Profile: profile})
				locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
				ctx := ctxT(t)
				mustTake(t, locks, "k", "owner")
				srv.ResetLog()
				srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "DELEX", Error: text})
				ok, err := locks.Release(ctx, "k", tok("owner"))
				assertServerError(t, ok, err, text)
				if got := lockCommands(srv.Log()); !slices.Equal(got, []string{"DELEX"}) {
					t.Fatalf("release sent %v; want exactly [DELEX]", got)
				}
				if got := srv.Exec("EXISTS", "k"); got != ":1\r\n" {
					t.Fatalf("key gone after a failed release: EXISTS = %q", got)
				}
			})
		}
	}
}

func TestExtensionNeverFallsBackOnOtherErrors(t *testing.T) {
	texts := append(slices.Clone(noFallbackReplies[:1]), noFallbackReplies[2:]...) // all but the confirming syntax error
	texts = append(texts, "ERR syntax error after forwarding", "ERR Syntax error", "err syntax error")
	for _, profile := range sim.Profiles {
		for _, text := range texts {
			t.Run(string(profile)+"/"+text, func(t *testing.T) {
				srv := startSim(t, sim.Config{Profile: profile})
				locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
				mustTake(t, locks, "k", "owner")
				srv.ResetLog()
				srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Error: text,
					Match: func(args []string) bool { return slices.Contains(args, "IFEQ") }})
				ok, err := locks.ResetExpiry(ctxT(t), "k", tok("owner"), time.Minute)
				assertServerError(t, ok, err, text)
				if got := lockCommands(srv.Log()); !slices.Equal(got, []string{"SET"}) {
					t.Fatalf("extension sent %v; want exactly [SET]", got)
				}
			})
		}
	}
}

func mustTake(t *testing.T, locks *Locks, key, owner string) {
	t.Helper()
	if ok, err := locks.TryTake(ctxT(t), key, tok(owner), time.Minute); !ok || err != nil {
		t.Fatalf("TryTake(%s) = %v, %v; want true, nil", key, ok, err)
	}
}

// assertServerError checks a definite server error carrying the reply text,
// matchable as the server's *conn.ServerError.
func assertServerError(t *testing.T, ok bool, err error, text string) {
	t.Helper()
	if ok || err == nil {
		t.Fatalf("got %v, %v; want false and the server error %q", ok, err, text)
	}
	if !errors.Is(err, conn.ErrServerReply) || errors.Is(err, conn.ErrOutcomeUnknown) {
		t.Fatalf("err = %v; want a definite server error", err)
	}
	var reply *conn.ServerError // the whole line the server sent, code included
	if !errors.As(err, &reply) {
		t.Fatalf("err = %v (%T); want errors.As *conn.ServerError", err, err)
	}
	if reply.Error() != text {
		t.Fatalf("the server's reply = %q; want %q", reply.Error(), text)
	}
}

func TestConnectionCutAfterReleaseRanIsUncertainAndNotReplayed(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
	mustTake(t, locks, "k", "owner")
	srv.ResetLog()
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Command: "DELEX"})
	ok, err := locks.Release(ctxT(t), "k", tok("owner"))
	if ok || !errors.Is(err, conn.ErrOutcomeUnknown) {
		t.Fatalf("Release = %v, %v; want false and an outcome-unknown error", ok, err)
	}
	if got := lockCommands(srv.Log()); !slices.Equal(got, []string{"DELEX"}) {
		t.Fatalf("release sent %v; want exactly [DELEX]", got)
	}
	if got := srv.Exec("EXISTS", "k"); got != ":0\r\n" {
		t.Fatalf("the DELEX should have executed: EXISTS = %q", got)
	}
}

func TestConnectionCutDuringFallbackIsUncertainAndNotReplayed(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey81})
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
	mustTake(t, locks, "k", "owner")
	srv.ResetLog()
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Command: "EVALSHA"})
	ok, err := locks.Release(ctxT(t), "k", tok("owner"))
	if ok || !errors.Is(err, conn.ErrOutcomeUnknown) {
		t.Fatalf("Release = %v, %v; want outcome unknown", ok, err)
	}
	if got := lockCommands(srv.Log()); !slices.Equal(got, []string{"DELEX", "DELIFEQ", "EVALSHA"}) {
		t.Fatalf("release sent %v; want [DELEX DELIFEQ EVALSHA] and no EVAL", got)
	}
}

func TestCancellationAfterSendIsUncertainAndNotReplayed(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
	mustTake(t, locks, "k", "owner")
	srv.ResetLog()
	gate := make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "DELEX", Gate: gate})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type answer struct {
		ok  bool
		err error
	}
	done := make(chan answer, 1)
	go func() {
		ok, err := locks.Release(ctx, "k", tok("owner"))
		done <- answer{ok, err}
	}()
	if _, err := srv.WaitFor(ctxT(t), func(e sim.Entry) bool { return e.Args[0] == "DELEX" }); err != nil {
		t.Fatalf("DELEX never reached the server: %v", err)
	}
	cancel()
	got := <-done
	if got.ok || !errors.Is(got.err, conn.ErrOutcomeUnknown) || !errors.Is(got.err, context.Canceled) {
		t.Fatalf("Release = %v, %v; want outcome unknown caused by cancellation", got.ok, got.err)
	}
	if cmds := lockCommands(srv.Log()); !slices.Equal(cmds, []string{"DELEX"}) {
		t.Fatalf("release sent %v; want exactly [DELEX]", cmds)
	}
}

func TestCancelledBeforeSendIsNotSubmitted(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
	mustTake(t, locks, "k", "owner")
	srv.ResetLog()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, err := locks.Release(ctx, "k", tok("owner"))
	if ok || !errors.Is(err, conn.ErrNotSubmitted) || errors.Is(err, conn.ErrOutcomeUnknown) {
		t.Fatalf("Release = %v, %v; want not submitted", ok, err)
	}
	if got := lockCommands(srv.Log()); len(got) != 0 {
		t.Fatalf("sent %v; want nothing", got)
	}
}

// The command timeout is 2 s of real time, not 50 ms: setting up (the
// dial, the acquisition) must fit in it too, and so must the ResetExpiry's
// hand-off of its SET (50 ms failed at load 20). On the driver's virtual
// clock the timeout would be a cancellation, which the transport reports
// as context.Canceled, not the deadline this test checks.
func TestCommandTimeoutAfterSendIsUncertain(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), WithCommandTimeout(2*time.Second))
	mustTake(t, locks, "k", "owner")
	if _, _, err := locks.OwnerToken(ctxT(t), "k"); err != nil { // opens the session
		t.Fatal(err)
	}
	srv.ResetLog()
	gate := make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Gate: gate})
	ok, err := locks.ResetExpiry(context.Background(), "k", tok("owner"), time.Minute)
	if ok || !errors.Is(err, conn.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ResetExpiry = %v, %v; want outcome unknown after the command timeout", ok, err)
	}
	if got := lockCommands(srv.Log()); !slices.Equal(got, []string{"SET"}) {
		t.Fatalf("sent %v; want exactly [SET]", got)
	}
}
