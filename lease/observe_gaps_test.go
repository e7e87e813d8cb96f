package lease

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// linkedToAcquire reports whether span links to one of tel's acquisition
// spans and has no parent (a root: nothing waits for it).
func (tel *telemetry) linkedToAcquire(span sdktrace.ReadOnlySpan) bool {
	return !span.Parent().IsValid() && slices.ContainsFunc(tel.ended(spanAcquire), func(a sdktrace.ReadOnlySpan) bool {
		return linksTo(span, a.SpanContext())
	})
}

// TestRenewalsAreTraced_EachKeepAliveRenewalIsASpan: with tracing, each
// keep-alive renewal is a respire.renew span from its send to its answer —
// a root linked to the lock's acquisition span — with respire.result and
// its command as an event; a lock's release ends no renewal span early.
func TestRenewalsAreTraced_EachKeepAliveRenewalIsASpan(t *testing.T) {
	tel := newTelemetry(t)
	_, locks := managedSim(t, sim.Redis84, tel.options()...)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	lock, err := locks.Acquire(ctxT(t), "renew:k", 10*time.Second, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		clock.Advance(5 * time.Second)
		eventually(t, "the renewal's span", func() bool { return len(tel.ended(spanRenew)) == n })
	}
	if err := lock.Close(); err != nil {
		t.Fatal(err)
	}
	for _, span := range tel.ended(spanRenew) {
		if attr(span, attrResult) != "renewed" || attr(span, "respire.event") != "renewed" || !tel.linkedToAcquire(span) {
			t.Errorf("renewal span %s: result %q, event %q, linked %v; want renewed, a root linked to the acquisition",
				span.Name(), attr(span, attrResult), attr(span, "respire.event"), tel.linkedToAcquire(span))
		}
	}
	if n := len(tel.ended(spanRenew)); n != 2 {
		t.Errorf("%d renewal spans; want 2", n)
	}
	if n := len(tel.ended(spanLoss)); n != 0 {
		t.Errorf("%d loss spans for a released lock; want 0", n)
	}
}

// TestLossIsTraced_ALossIsASpanWithItsCause: a lease lost to a refused
// renewal, and one lost to a push-driven read, are each a respire.loss span
// (a root linked to the lock's acquisition span) with the cause as
// respire.result and the state graph's edge as respire.event; the refused
// renewal's own span says refused.
func TestLossIsTraced_ALossIsASpanWithItsCause(t *testing.T) {
	serverClock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
	srv := startSim(t, sim.Config{Profile: sim.Redis84, Clock: serverClock})
	tel := newTelemetry(t)
	polled := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), tel.options(WithoutPush())...)
	clock := &actor.ManualClock{}
	useClock(polled, clock)
	ctx := ctxT(t)
	lock, err := polled.Acquire(ctx, "loss:renewal", 10*time.Second, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	srv.Exec("SET", "loss:renewal", "another-owner", "KEEPTTL")
	clock.Advance(5 * time.Second)
	waitDone(t, lock.Context())

	pushed := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), tel.options()...)
	held, err := pushed.Acquire(ctx, "loss:push", time.Minute, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the holder's key tracked", func() bool { return holderArmed(pushed, "loss:push") })
	srv.Exec("DEL", "loss:push")
	waitDone(t, held.Context())

	eventually(t, "two loss spans", func() bool { return len(tel.ended(spanLoss)) == 2 })
	want := map[string]string{"refused": "renewal-refused", "read-refused": "owner-read-refused"}
	for _, span := range tel.ended(spanLoss) {
		cause := attr(span, attrResult)
		if edge, ok := want[cause]; !ok || attr(span, "respire.event") != edge || !tel.linkedToAcquire(span) {
			t.Errorf("loss span: result %q, event %q, linked %v; want one of %v, a root linked to the acquisition",
				cause, attr(span, "respire.event"), tel.linkedToAcquire(span), want)
		}
		delete(want, cause)
	}
	renewals := tel.ended(spanRenew)
	if len(renewals) != 1 || attr(renewals[0], attrResult) != "refused" {
		t.Errorf("renewal spans %v; want the one refused", renewals)
	}
}

// TestProbeIsNotAFence_TheProbeIsNamedApart: the permission probe that a
// keep-alive's acquisition sends (CLIENT KILL ID <own> SKIPME yes, which
// kills nothing) is the event "CLIENT KILL SKIPME (permission probe)" of the
// acquisition's span, never "CLIENT KILL", which names a fence's kill.
func TestProbeIsNotAFence_TheProbeIsNamedApart(t *testing.T) {
	tel := newTelemetry(t)
	_, locks := managedSim(t, sim.Valkey90, tel.options()...)
	lock, err := locks.Acquire(ctxT(t), "probe:k", time.Minute, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	_ = lock.Close()
	acquires := tel.ended(spanAcquire)
	if len(acquires) != 1 {
		t.Fatalf("%d acquisition spans; want 1", len(acquires))
	}
	ev := events(acquires[0])
	if !slices.Contains(ev, conn.ProbeCommandName) || slices.Contains(ev, "CLIENT KILL") {
		t.Fatalf("acquisition span events %v; want %q and no CLIENT KILL", ev, conn.ProbeCommandName)
	}
	if n := len(tel.ended(spanFence)); n != 0 {
		t.Fatalf("%d fence spans; want 0", n)
	}
}

// TestOneResultAttribute_EveryResultIsRespireResult: every word attribute
// of the metrics and spans that says how something ended — acquisitions,
// renewals, releases, losses, fences, retired sessions — is respire.result;
// respire.outcome, respire.cause and respire.reason are gone.
func TestOneResultAttribute_EveryResultIsRespireResult(t *testing.T) {
	tel := newTelemetry(t)
	srv, locks := managedSim(t, sim.Redis70, tel.options(WithoutPush())...)
	playOperatorEvents(t, srv, locks)
	locks.Close()
	allowed := []string{attrResult, attrCapability, attrServerAddr, attrServerPort}
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, key := range tel.attrKeys(t, m.Name) {
				if !slices.Contains(allowed, key) {
					t.Errorf("metric %s has attribute %s; want results as %s", m.Name, key, attrResult)
				}
				if key == attrResult {
					seen++
				}
			}
		}
	}
	for _, span := range tel.spans.Ended() {
		for _, kv := range span.Attributes() {
			if k := string(kv.Key); strings.HasPrefix(k, "respire.") && k != attrResult && k != "respire.event" &&
				k != "respire.lock.keep_alive" {
				t.Errorf("span %s has attribute %s", span.Name(), k)
			}
		}
	}
	for _, name := range []string{"respire.lock.releases", "respire.lock.losses", "respire.sessions.retired", "respire.fences"} {
		if keys := tel.attrKeys(t, name); !slices.Contains(keys, attrResult) {
			t.Errorf("metric %s has attributes %v; want %s", name, keys, attrResult)
		}
	}
	if seen == 0 {
		t.Fatal("no metric has a respire.result")
	}
}

// TestScopeVersion_MetricsAndSpansNameTheirRelease: the instrumentation
// scope of the metrics and spans has the package's name and Version, which
// is the newest release CHANGELOG.md names.
func TestScopeVersion_MetricsAndSpansNameTheirRelease(t *testing.T) {
	changelog, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	newest := regexp.MustCompile(`(?m)^## v(\d+\.\d+\.\d+)`).FindSubmatch(changelog)
	if newest == nil || string(newest[1]) != Version {
		t.Fatalf("CHANGELOG.md's newest release %q; want Version %q", newest, Version)
	}
	tel := newTelemetry(t)
	_, locks := managedSim(t, sim.Redis84, tel.options()...)
	lock, err := locks.Acquire(ctxT(t), "scope:k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_ = lock.Close()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if len(rm.ScopeMetrics) == 0 {
		t.Fatal("no metrics")
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scope || sm.Scope.Version != Version {
			t.Errorf("metric scope %q %q; want %q %q", sm.Scope.Name, sm.Scope.Version, scope, Version)
		}
	}
	for _, span := range tel.spans.Ended() {
		if s := span.InstrumentationScope(); s.Name != scope || s.Version != Version {
			t.Errorf("span %s scope %q %q; want %q %q", span.Name(), s.Name, s.Version, scope, Version)
		}
	}
}

// TestLogEvents_DurationsAreText: the acquired record's ttl and waited,
// and a logged Lock's remaining estimate, are text ("1m0s"), not a JSON
// handler's nanoseconds.
func TestLogEvents_DurationsAreText(t *testing.T) {
	w := &logBuffer{}
	srv, locks := managedSim(t, sim.Redis84, WithLogger(debugLogger(w)))
	_ = srv
	lock, err := locks.Acquire(ctxT(t), "log:k", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	slog.New(slog.NewJSONHandler(w, nil)).Info("held", "lock", lock)
	records := w.records(t)
	acquired := matching(records, msgAcquired, nil)
	if len(acquired) != 1 {
		t.Fatalf("%d acquired records; want 1", len(acquired))
	}
	if ttl, _ := acquired[0]["ttl"].(string); ttl != "2s" {
		t.Errorf(`acquired record's ttl = %#v; want "2s"`, acquired[0]["ttl"])
	}
	if waited, ok := acquired[0]["waited"].(string); !ok {
		t.Errorf("acquired record's waited = %#v; want text", acquired[0]["waited"])
	} else if _, err := time.ParseDuration(waited); err != nil {
		t.Errorf("waited %q is not a duration: %v", waited, err)
	}
	held := matching(records, "held", nil)
	if len(held) != 1 {
		t.Fatalf("%d held records; want 1", len(held))
	}
	group, _ := held[0]["lock"].(map[string]any)
	if remaining, _ := group["remaining"].(string); !strings.HasSuffix(remaining, "s") {
		raw, _ := json.Marshal(held[0])
		t.Errorf("logged lock %s: remaining is not text", raw)
	}
}

// TestNamedValues_AnUncertainReleaseNamesItsOutcome: a release whose
// outcome is unknown returns ReleaseUnknown with its error (matching
// ErrOutcomeUnknown), which logs as "Unknown"; the zero outcome that comes
// with other errors logs as "NoOutcome".
func TestNamedValues_AnUncertainReleaseNamesItsOutcome(t *testing.T) {
	srv, locks := managedSim(t, sim.Valkey90)
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "named:k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Match: func(args []string) bool {
		return strings.EqualFold(args[0], "DELEX") || strings.EqualFold(args[0], "DELIFEQ")
	}})
	out, err := lock.Release(ctx)
	if out != ReleaseUnknown || !errorsIsUnknown(err) {
		t.Fatalf("Release = %v, %v; want ReleaseUnknown with an error matching ErrOutcomeUnknown", out, err)
	}
	for value, want := range map[ReleaseOutcome]string{ReleaseUnknown: "Unknown", 0: "NoOutcome"} {
		if got := renderings(value)["slog JSON"]; !strings.Contains(got, `"value":"`+want+`"`) {
			t.Errorf("slog JSON of outcome %d = %q; want %q", uint8(value), got, want)
		}
	}
}

func errorsIsUnknown(err error) bool { return errors.Is(err, ErrOutcomeUnknown) }
