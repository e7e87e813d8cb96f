package lease

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

// printed is one value of the API to print, named for failure messages.
type printed struct {
	name  string
	value any
}

// formatVerbs are the fmt verbs every value is printed with.
var formatVerbs = []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"}

// renderings returns value as fmt prints it with every verb and as slog's
// text and JSON handlers log it (slog.Any), keyed by how it was rendered.
func renderings(value any) map[string]string {
	out := map[string]string{}
	for _, verb := range formatVerbs {
		out["fmt "+verb] = fmt.Sprintf(verb, value)
	}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("msg", slog.Any("value", value))
	slog.New(slog.NewJSONHandler(&js, nil)).Info("msg", slog.Any("value", value))
	out["slog text"], out["slog JSON"] = text.String(), js.String()
	return out
}

// surfaceValues returns a value of every printable type of the API, in
// every interesting state, and the owner tokens involved.
func surfaceValues(t *testing.T) ([]printed, []Token) {
	t.Helper()
	srv, locks := managedSim(t, sim.Redis84)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	ctx := ctxT(t)
	var tokens []Token
	acquire := func(key string, opts ...AcquireOption) *Lock {
		t.Helper()
		lock, err := locks.Acquire(ctx, key, time.Minute, opts...)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, lock.Token())
		t.Cleanup(func() { _ = lock.Close() })
		return lock
	}

	held := acquire("held")
	attempt, err := locks.TryAcquire(ctx, "attempt", time.Minute)
	if err != nil || !attempt.Acquired() {
		t.Fatalf("TryAcquire = %v, %v", attempt.Acquired(), err)
	}
	tokens = append(tokens, attempt.Lock().Token())
	t.Cleanup(func() { _ = attempt.Close() })
	notAcquired, err := locks.TryAcquire(ctx, "held", time.Minute)
	if err != nil || notAcquired.Acquired() {
		t.Fatalf("contended TryAcquire = %v, %v", notAcquired.Acquired(), err)
	}

	released := acquire("released")
	if _, err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}

	kept := acquire("kept")
	running, err := kept.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stopped := acquire("stopped")
	ended, err := stopped.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ended.Stop()

	// A loss (its context's *LossError) and a keep-alive ended by it.
	lost := acquire("lost")
	lostKeepAlive, err := lost.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Exec("SET", "lost", "another-owner")
	if ok, err := lost.ResetExpiry(ctx, time.Minute); ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v; want false", ok, err)
	}
	lossErr := context.Cause(lost.Context())

	// A server error reply: *OpError of Release.
	failing := acquire("failing")
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "DELEX", Error: "ERR injected failure"})
	_, opErr := failing.Release(ctx)
	var op *OpError
	if !errors.As(opErr, &op) {
		t.Fatalf("Release with an error reply = %v; want an *OpError", opErr)
	}

	// A keep-alive renewal that failed: *RenewalFailureError.
	renewFailing := acquire("renew-failing", WithKeepAlive())
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "SET", Error: "ERR injected renewal failure",
		Match: func(args []string) bool { return hasIFEQ(args) && args[1] == "renew-failing" }})
	clock.Advance(sm.RenewalDelay(renewFailing.Duration(), renewFailing.RemainingEstimate()))
	renewalCause := causeOf(t, renewFailing.Context())
	var failedRenewal *RenewalFailureError
	if !errors.As(renewalCause, &failedRenewal) {
		t.Fatalf("the cause of a failed renewal = %v; want a *RenewalFailureError", renewalCause)
	}

	// A user without CLIENT KILL: *PermissionError.
	srv.SetUser("locker", "lockerpw", "set", "get", "delex", "client|id", "client|info")
	limited := newLocks(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw", true))
	limitedLock, err := limited.Acquire(ctx, "limited", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tokens = append(tokens, limitedLock.Token())
	t.Cleanup(func() { _ = limitedLock.Close() })
	_, permErr := limitedLock.KeepAlive(ctx)
	var perm *PermissionError
	if !errors.As(permErr, &perm) {
		t.Fatalf("KeepAlive without CLIENT KILL = %v; want a *PermissionError", permErr)
	}

	values := []printed{
		{"held *Lock", held},
		{"released *Lock", released},
		{"lost *Lock", lost},
		{"acquired Attempt", attempt},
		{"Attempt not acquired", notAcquired},
		{"*Locks", locks},
		{"running *KeepAlive", running},
		{"stopped *KeepAlive", ended},
		{"*KeepAlive ended by a loss", lostKeepAlive},
		{"Token", held.Token()},
		{"*OpError", op},
		{"error from Release", opErr},
		{"*LossError", lossErr},
		{"*RenewalFailureError", failedRenewal},
		{"a lock's context after a failed renewal", renewFailing.Context()},
		{"*PermissionError", perm},
		{"error from KeepAlive", permErr},
		{"nil *Lock", (*Lock)(nil)},
		{"nil *KeepAlive", (*KeepAlive)(nil)},
		{"nil *Locks", (*Locks)(nil)},
		{"zero Attempt", Attempt{}},
		{"zero Token", Token{}},
	}
	for s := StateHeld; s <= StateReleased; s++ {
		values = append(values, printed{"State " + s.String(), s})
	}
	for o := Released; o <= NotOwned; o++ {
		values = append(values, printed{"ReleaseOutcome " + o.String(), o})
	}
	for r := LossRefused; r <= LossDeadlineInFlight; r++ {
		values = append(values, printed{"LossReason " + r.String(), r})
		values = append(values, printed{"*LossError " + r.String(), &LossError{Reason: r, Err: opErr}})
	}
	return values, tokens
}

// TestNoTokenInOutput_FmtAndSlogNeverShowAnOwnerToken: no value of the API
// — locks, attempts, keep-alives running or ended, tokens, states,
// outcomes, reasons, every error type — printed with any fmt verb or
// logged with slog's text or JSON handler shows an owner token's bytes or
// its Hex.
func TestNoTokenInOutput_FmtAndSlogNeverShowAnOwnerToken(t *testing.T) {
	values, tokens := surfaceValues(t)
	for _, v := range values {
		for how, out := range renderings(v.value) {
			upper := strings.ToUpper(out)
			for _, tok := range tokens {
				if strings.Contains(out, tok.wire()) || strings.Contains(upper, tok.Hex()) ||
					strings.Contains(upper, strings.ToUpper(tok.wire())) {
					t.Errorf("%s of %s = %q: it shows an owner token", how, v.name, out)
				}
			}
		}
	}
}

// TestNamedValues_StatesAndOutcomesRenderAsWords: State, ReleaseOutcome and
// LossReason print as their names with fmt, slog (text and JSON) and
// MarshalText — never as numbers — and a Lock shows its state by name.
func TestNamedValues_StatesAndOutcomesRenderAsWords(t *testing.T) {
	type named interface {
		String() string
		MarshalText() ([]byte, error)
	}
	cases := []struct {
		value named
		want  string
	}{
		{StateHeld, "Held"}, {StateReleasing, "Releasing"}, {StateRecovering, "Recovering"},
		{StateUncertain, "Uncertain"}, {StateLost, "Lost"}, {StateReleased, "Released"},
		{Released, "Released"}, {AlreadyReleased, "AlreadyReleased"}, {NotOwned, "NotOwned"},
		{LossRefused, "refused"}, {LossRenewalUnknown, "renewal-outcome-unknown"},
		{LossReleaseUnknown, "release-outcome-unknown"}, {LossDeadline, "deadline"},
		{LossDeadlineInFlight, "deadline-in-flight"},
	}
	for _, c := range cases {
		for _, verb := range []string{"%v", "%s"} {
			if got := fmt.Sprintf(verb, c.value); got != c.want {
				t.Errorf("fmt %s of %T %q = %q", verb, c.value, c.want, got)
			}
		}
		if text, err := c.value.MarshalText(); err != nil || string(text) != c.want {
			t.Errorf("MarshalText of %T %q = %q, %v", c.value, c.want, text, err)
		}
		if js, err := json.Marshal(c.value); err != nil || string(js) != `"`+c.want+`"` {
			t.Errorf("json.Marshal of %T %q = %s, %v", c.value, c.want, js, err)
		}
		out := renderings(c.value)
		if text := out["slog text"]; !strings.Contains(text, "value="+c.want+"\n") {
			t.Errorf("slog text of %T %q = %q; want value=%s", c.value, c.want, text, c.want)
		}
		if js := out["slog JSON"]; !strings.Contains(js, `"value":"`+c.want+`"`) {
			t.Errorf("slog JSON of %T %q = %q; want \"value\":%q", c.value, c.want, js, c.want)
		}
	}

	_, _, lock := acquireWithClock(t, 10*time.Second)
	out := renderings(lock)
	if got := out["fmt %v"]; !strings.Contains(got, "state: Held") {
		t.Errorf("fmt %%v of a held lock = %q; want its state by name", got)
	}
	if got := out["slog text"]; !strings.Contains(got, "value.state=Held") {
		t.Errorf("slog text of a held lock = %q; want value.state=Held", got)
	}
	if got := out["slog JSON"]; !strings.Contains(got, `"state":"Held"`) {
		t.Errorf("slog JSON of a held lock = %q; want \"state\":\"Held\"", got)
	}
}
