package leasesuite

import (
	"context"
	"errors"
	"github.com/respire-go/respire/lease"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// TestAcquisitionMetrics_ContentionIsCountedTimedAndTraced: acquisitions
// are counted and timed by result — acquired, contended, abandoned (the
// caller's ctx ended while waiting), failed — held locks go up and down,
// and a waiting acquisition is one span, a child of the caller's, with one
// SET event per try; with WithKeyPrefixAttribute the view's prefix is an
// attribute, and no key or token ever is.
func caseAcquisitionMetrics_ContentionIsCountedTimedAndTraced(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84, History: true})
	tel := newTelemetry(t)
	jobs := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, false), tel.options(lease.WithKeyPrefixAttribute())...).WithKeyPrefix("jobs:")
	other := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, false))
	ctx := ctxT(t)

	holder, err := other.Acquire(ctx, "jobs:k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := jobs.TryAcquire(ctx, "k", time.Minute); err != nil || a.Acquired() {
		t.Fatalf("TryAcquire of a held key = %v, %v; want contended", a.Acquired(), err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	_, err = jobs.Acquire(short, "k", time.Minute, lease.WithWaitUntilDone(), lease.WithRetryEvery(5*time.Millisecond))
	cancel()
	if err == nil {
		t.Fatal("Acquire succeeded while another owner held the key")
	}

	parentCtx, parent := tel.traces.Tracer("test").Start(ctx, "caller")
	mark := len(srv.History())
	done := make(chan error, 1)
	var lock *lease.Lock
	go func() {
		var err error
		lock, err = jobs.Acquire(parentCtx, "k", time.Minute, lease.WithWait(5*time.Second), lease.WithRetryEvery(10*time.Millisecond))
		done <- err
	}()
	// The abandoned Acquire may have left one SET in flight when it
	// returned: two SETs executed after the mark include at least one
	// contended try of the waiting Acquire, which must then try again.
	waitExecuted(t, srv, mark, 2, isCommand("SET", "jobs:k"))
	if out, err := holder.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiting Acquire = %v", err)
	}
	parent.End()
	prefix := str(attrKeyPrefix, "jobs:")
	if n := tel.sum(t, "respire.lock.held", prefix); n != 1 {
		t.Errorf("respire.lock.held = %d while the lock is held; want 1", n)
	}
	if _, err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	jobs.Close()
	_, err = jobs.Acquire(ctx, "k", time.Minute)
	if !errors.Is(err, lease.ErrClosed) {
		t.Fatalf("Acquire on a closed Locks = %v", err)
	}

	for result, want := range map[string]int64{"acquired": 1, "contended": 1, "abandoned": 1, "failed": 1} {
		if n := tel.sum(t, "respire.lock.acquisitions", str(attrResult, result), prefix); n != want {
			t.Errorf("respire.lock.acquisitions{result=%s} = %d; want %d", result, n, want)
		}
		if n := tel.count(t, "respire.lock.acquire.duration", str(attrResult, result), prefix); n != uint64(want) {
			t.Errorf("respire.lock.acquire.duration{result=%s} has %d measurements; want %d", result, n, want)
		}
	}
	if n := tel.sum(t, "respire.lock.held", prefix); n != 0 {
		t.Errorf("respire.lock.held = %d after the release; want 0", n)
	}
	if n := tel.sum(t, "respire.lock.releases", str(attrResult, "released")); n != 1 {
		t.Errorf("respire.lock.releases{outcome=released} = %d; want 1", n)
	}
	if keys := tel.attrKeys(t, "respire.lock.acquisitions"); !slices.Equal(keys, []string{attrKeyPrefix, attrResult}) {
		t.Errorf("respire.lock.acquisitions attributes %v; want only the result and the prefix", keys)
	}

	var waited []string
	for _, span := range tel.ended(spanAcquire) {
		if span.Parent().SpanID() == parent.SpanContext().SpanID() {
			waited = events(span)
			if got := attr(span, attrResult); got != "acquired" {
				t.Errorf("the waiting acquisition's span has result %q; want acquired", got)
			}
		}
		if attr(span, attrResult) == "failed" && span.Status().Code != codes.Error {
			t.Errorf("a failed acquisition's span has status %v; want Error", span.Status())
		}
		noSecretIn(t, "a span", strings.Join(events(span), " ")+attr(span, attrKeyPrefix), lock.Token())
	}
	if n := countOf(waited, "SET"); n < 2 {
		t.Errorf("the waiting acquisition's span has events %v; want a SET per try (at least 2)", waited)
	}
	if releases := tel.ended(spanRelease); len(releases) != 1 || attr(releases[0], attrResult) != "released" {
		t.Errorf("release spans %v; want one, released", releases)
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestLossMetrics_ARefusedRenewalCountsALossWithItsCause: the key expires
// on the server and another owner takes it; the keep-alive's next renewal
// is refused. The renewal is counted refused (and how late it was sent),
// the loss by its cause, and the lock no longer counts as held.
func caseLossMetrics_ARefusedRenewalCountsALossWithItsCause(t *testing.T, tr Transport) {
	serverClock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
	srv := startSim(t, sim.Config{Profile: sim.Redis84, Clock: serverClock})
	tel := newTelemetry(t)
	// WithoutPush: the renewal, not a push, must find the loss here.
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, false), tel.options(lease.WithoutPush())...)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if n := tel.sum(t, "respire.lock.held"); n != 1 {
		t.Fatalf("respire.lock.held = %d; want 1", n)
	}
	serverClock.Advance(11 * time.Second)
	if got := srv.Exec("SET", "k", "another-owner", "NX", "PX", "60000"); got != "+OK\r\n" {
		t.Fatalf("another owner's SET NX = %q", got)
	}
	clock.Advance(5 * time.Second)
	waitDone(t, lock.Context())
	if !errors.Is(context.Cause(lock.Context()), lease.ErrOwnershipLost) {
		t.Fatalf("cause %v; want ErrOwnershipLost", context.Cause(lock.Context()))
	}
	if n := tel.sum(t, "respire.lock.losses", str(attrResult, "refused")); n != 1 {
		t.Errorf("respire.lock.losses{cause=refused} = %d; want 1", n)
	}
	if n := tel.sum(t, "respire.lock.renewals", str(attrResult, "refused")); n != 1 {
		t.Errorf("respire.lock.renewals{result=refused} = %d; want 1", n)
	}
	if n := tel.count(t, "respire.lock.renewal.lateness"); n != 1 {
		t.Errorf("respire.lock.renewal.lateness has %d measurements; want 1 (the keep-alive renewal)", n)
	}
	if n := tel.sum(t, "respire.lock.held"); n != 0 {
		t.Errorf("respire.lock.held = %d after the loss; want 0", n)
	}
	if keys := tel.attrKeys(t, "respire.lock.losses"); !slices.Equal(keys, []string{attrResult}) {
		t.Errorf("respire.lock.losses attributes %v; want only the cause", keys)
	}
}

// TestFenceMetrics_AnUncertainRenewalIsFencedCountedAndTraced: a reset
// whose reply is held on a stalled connection and whose caller stops
// waiting has an unknown outcome: its connection is fenced. The renewal,
// the loss, the fence and the fenced session are counted; the fence is a
// span linked to the lock's acquisition span, with the CLIENT KILL as its
// event, and the reset's span says the outcome is unknown.
func caseFenceMetrics_AnUncertainRenewalIsFencedCountedAndTraced(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		tel := newTelemetry(t)
		locks := f.locks(t, tel.options()...)
		ctx := ctxT(t)
		lock, err := locks.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		f.sessionConn(t, lock).Stall(faultproxy.ToClient)
		resetCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { _, err := lock.ResetExpiry(resetCtx, time.Minute); done <- err }()
		waitEntry(t, f.srv, isRenewal("k"))
		cancel()
		<-done
		eventually(t, "the lock lost once the fence answered", func() bool { return lock.State() == lease.StateLost })
		f.proxy.UnstallAll(faultproxy.Both)
		locks.Close()

		for name, want := range map[string]string{
			"respire.lock.renewals": "unknown", "respire.fences": "ok",
		} {
			if n := tel.sum(t, name, str(attrResult, want)); n != 1 {
				t.Errorf("%s{result=%s} = %d; want 1", name, want, n)
			}
		}
		if n := tel.sum(t, "respire.lock.losses", str(attrResult, lease.LossRenewalUnknown.String())); n != 1 {
			t.Errorf("respire.lock.losses{cause=renewal-outcome-unknown} = %d; want 1", n)
		}
		if n := tel.sum(t, "respire.sessions.retired", str(attrResult, "fenced")); n != 1 {
			t.Errorf("respire.sessions.retired{reason=fenced} = %d; want 1", n)
		}
		opened := tel.sum(t, "respire.sessions.opened")
		if retired := tel.sum(t, "respire.sessions.retired"); opened < 1 || retired != opened {
			t.Errorf("%d sessions opened, %d retired after Close; want every opened one retired", opened, retired)
		}
		fences, acquires := tel.ended(spanFence), tel.ended(spanAcquire)
		if len(fences) != 1 || !slices.Contains(events(fences[0]), "CLIENT KILL") || attr(fences[0], attrResult) != "ok" {
			t.Fatalf("fence spans %v; want one, ok, with a CLIENT KILL event", fences)
		}
		linked := slices.ContainsFunc(acquires, func(a sdktrace.ReadOnlySpan) bool { return linksTo(fences[0], a.SpanContext()) })
		if !linked {
			t.Error("the fence's span does not link to the lock's acquisition span")
		}
		resets := tel.ended(spanReset)
		if len(resets) != 1 {
			t.Errorf("%d reset spans; want 1", len(resets))
		} else if attr(resets[0], "error.type") != "outcome-unknown" || resets[0].Status().Code != codes.Error {
			t.Errorf("the reset's span has error.type %q, status %v; want outcome-unknown, Error",
				attr(resets[0], "error.type"), resets[0].Status())
		} else if ev := events(resets[0]); !slices.Contains(ev, "SET") && !slices.Contains(ev, "EVALSHA") {
			t.Errorf("the reset's span has events %v; want its renewal command", ev)
		}
	})
}

// TestFallbackMetrics_EachFallbackIsCountedPerCapabilityAndServer: on Redis
// 7.0 a release falls back from DELEX to DELIFEQ to the script and a
// renewal from SET IFEQ to the script (each EVALSHA once more to EVAL
// while the script is not cached); each step is counted with its
// capability and the server's address and port, and a session that learned
// a capability skips it afterwards.
func caseFallbackMetrics_EachFallbackIsCountedPerCapabilityAndServer(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Redis70})
	tel := newTelemetry(t)
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, false), tel.options()...)
	ctx := ctxT(t)
	for range 2 { // the second round takes no fallback: the session learned
		lock, err := locks.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := lock.ResetExpiry(ctx, time.Minute); !ok || err != nil {
			t.Fatalf("ResetExpiry = %v, %v", ok, err)
		}
		if out, err := lock.Release(ctx); out != lease.Released || err != nil {
			t.Fatalf("Release = %v, %v", out, err)
		}
	}
	host, port := splitAddr(t, srv.Addr())
	for capability, want := range map[string]int64{"delex": 1, "delifeq": 1, "set-ifeq": 1, "script-cache": 2} {
		if n := tel.sum(t, "respire.fallbacks", str(attrCapability, capability), str(attrServerAddr, host)); n != want {
			t.Errorf("respire.fallbacks{capability=%s} = %d; want %d", capability, n, want)
		}
	}
	if keys := tel.attrKeys(t, "respire.fallbacks"); !slices.Equal(keys, []string{attrCapability, attrServerAddr, attrServerPort}) {
		t.Errorf("respire.fallbacks attributes %v; want capability, server.address, server.port", keys)
	}
	if n := tel.sum(t, "respire.fallbacks", attribute.Int(attrServerPort, port)); n != 5 {
		t.Errorf("respire.fallbacks{server.port=%d} = %d; want 5", port, n)
	}
	for _, span := range tel.ended(spanRelease)[:1] {
		if ev := events(span); !slices.Equal(ev, []string{"DELEX", "DELIFEQ", "EVALSHA", "EVAL"}) {
			t.Errorf("the first release's span has events %v; want the whole ladder", ev)
		}
	}
}

// splitAddr splits a host:port address.
func splitAddr(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return host, n
}

func init() {
	register(
		Case{"AcquisitionMetrics_ContentionIsCountedTimedAndTraced", caseAcquisitionMetrics_ContentionIsCountedTimedAndTraced},
		Case{"LossMetrics_ARefusedRenewalCountsALossWithItsCause", caseLossMetrics_ARefusedRenewalCountsALossWithItsCause},
		Case{"FenceMetrics_AnUncertainRenewalIsFencedCountedAndTraced", caseFenceMetrics_AnUncertainRenewalIsFencedCountedAndTraced},
		Case{"FallbackMetrics_EachFallbackIsCountedPerCapabilityAndServer", caseFallbackMetrics_EachFallbackIsCountedPerCapabilityAndServer},
	)
}
