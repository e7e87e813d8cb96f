package leasesuite

import (
	"context"
	"github.com/respire-go/respire/lease"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The attribute and span names of lease's telemetry (package doc).
const (
	attrResult     = "respire.result"
	attrCapability = "respire.capability"
	attrKeyPrefix  = "respire.lock.key_prefix"
	attrServerAddr = "server.address"
	attrServerPort = "server.port"
	spanAcquire    = "respire.acquire"
	spanRelease    = "respire.release"
	spanReset      = "respire.reset"
	spanFence      = "respire.fence"
	scope          = "github.com/respire-go/respire/lease"
)

// telemetry is an OpenTelemetry SDK that keeps what it records in memory:
// a manual metric reader and a span recorder.
type telemetry struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	meters *sdkmetric.MeterProvider
	traces *sdktrace.TracerProvider
}

func newTelemetry(t testing.TB) *telemetry {
	tel := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	tel.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	tel.traces = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	t.Cleanup(func() {
		_ = tel.meters.Shutdown(context.Background())
		_ = tel.traces.Shutdown(context.Background())
	})
	return tel
}

// options gives Locks both providers.
func (tel *telemetry) options(more ...lease.Option) []lease.Option {
	return append([]lease.Option{lease.WithMeterProvider(tel.meters), lease.WithTracerProvider(tel.traces)}, more...)
}

// metric returns the metric called name, or ok false.
func (tel *telemetry) metric(t testing.TB, name string) (metricdata.Metrics, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collecting metrics: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				if sm.Scope.Name != scope {
					t.Errorf("metric %s has scope %q; want %q", name, sm.Scope.Name, scope)
				}
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// has reports whether set holds every attribute of want.
func has(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// sum is the value of the counter (or up-down counter) name summed over
// its data points whose attributes include want.
func (tel *telemetry) sum(t testing.TB, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := tel.metric(t, name)
	if !ok {
		return 0
	}
	data, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("metric %s is a %T; want an int64 sum", name, m.Data)
	}
	var n int64
	for _, dp := range data.DataPoints {
		if has(dp.Attributes, want) {
			n += dp.Value
		}
	}
	return n
}

// count is the number of measurements of the histogram name whose
// attributes include want.
func (tel *telemetry) count(t testing.TB, name string, want ...attribute.KeyValue) uint64 {
	t.Helper()
	m, ok := tel.metric(t, name)
	if !ok {
		return 0
	}
	data, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("metric %s is a %T; want a float64 histogram", name, m.Data)
	}
	if m.Unit != "s" {
		t.Errorf("histogram %s has unit %q; want s", name, m.Unit)
	}
	var n uint64
	for _, dp := range data.DataPoints {
		if has(dp.Attributes, want) {
			n += dp.Count
		}
	}
	return n
}

// attrKeys lists every attribute key the metric name uses.
func (tel *telemetry) attrKeys(t testing.TB, name string) []string {
	t.Helper()
	m, _ := tel.metric(t, name)
	var sets []attribute.Set
	switch data := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range data.DataPoints {
			sets = append(sets, dp.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, dp := range data.DataPoints {
			sets = append(sets, dp.Attributes)
		}
	}
	var keys []string
	for _, s := range sets {
		for _, kv := range s.ToSlice() {
			if !slices.Contains(keys, string(kv.Key)) {
				keys = append(keys, string(kv.Key))
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// ended returns the ended spans called name.
func (tel *telemetry) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// attr returns the value of span's attribute key as text, "" if absent.
func attr(span sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range span.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// events returns the names of span's events.
func events(span sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range span.Events() {
		out = append(out, e.Name)
	}
	return out
}

// linksTo reports whether span links to the span context sc.
func linksTo(span sdktrace.ReadOnlySpan, sc trace.SpanContext) bool {
	for _, l := range span.Links() {
		if l.SpanContext.SpanID() == sc.SpanID() && l.SpanContext.TraceID() == sc.TraceID() {
			return true
		}
	}
	return false
}

// noSecretIn fails when text shows any of the tokens.
func noSecretIn(t testing.TB, what, text string, tokens ...lease.Token) {
	t.Helper()
	for _, tk := range tokens {
		if strings.Contains(text, wireOf(tk)) || strings.Contains(text, tk.Hex()) {
			t.Errorf("%s shows an owner token:\n%s", what, text)
		}
	}
}

func str(key, value string) attribute.KeyValue { return attribute.String(key, value) }
