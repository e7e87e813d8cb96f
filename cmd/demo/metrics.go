package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
	"go.opentelemetry.io/otel/metric/noop"
)

// metricOrder is the order of the metrics table: the lease package's
// metrics (see "Operating it" in the README).
var metricOrder = []string{
	"respire.lock.acquisitions",
	"respire.lock.acquire.duration",
	"respire.lock.held",
	"respire.lock.renewals",
	"respire.lock.renewal.lateness",
	"respire.lock.releases",
	"respire.lock.losses",
	"respire.fences",
	"respire.fallbacks",
	"respire.sessions.opened",
	"respire.sessions.retired",
}

// meterStore keeps what the demo's meter provider was told, per metric
// and value of its word attribute: the sum of a counter's additions, or a
// histogram's count and sum. It is the demo's stand-in for an
// OpenTelemetry SDK and exporter (the SDK would cost the demo's first
// build tens of seconds); lease records through the metric API as it does
// into any MeterProvider.
type meterStore struct {
	mu     sync.Mutex
	counts map[string]map[string]int64
	sums   map[string]map[string]float64 // histograms only
}

// newMeters returns a meter provider whose measurements the demo reads back
// from its store.
func newMeters() (metric.MeterProvider, *meterStore) {
	store := &meterStore{counts: map[string]map[string]int64{}, sums: map[string]map[string]float64{}}
	return meterProvider{store: store}, store
}

// record adds n (a counter) or one measurement of v (a histogram) to
// metric name under the word attribute of attrs.
func (st *meterStore) record(name string, attrs attribute.Set, n int64, v float64, histogram bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	l := label(attrs)
	if st.counts[name] == nil {
		st.counts[name] = map[string]int64{}
	}
	st.counts[name][l] += n
	if histogram {
		if st.sums[name] == nil {
			st.sums[name] = map[string]float64{}
		}
		st.sums[name][l] += v
	}
}

// meterProvider, meter and the instruments below are the metric API's
// no-op implementations with the calls lease makes recorded in a store.
type meterProvider struct {
	embedded.MeterProvider
	store *meterStore
}

func (p meterProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return meter{store: p.store}
}

type meter struct {
	noop.Meter
	store *meterStore
}

func (m meter) Int64Counter(name string, _ ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return int64Counter{name: name, store: m.store}, nil
}

func (m meter) Int64UpDownCounter(name string, _ ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	return int64UpDownCounter{name: name, store: m.store}, nil
}

func (m meter) Float64Histogram(name string, _ ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return float64Histogram{name: name, store: m.store}, nil
}

type int64Counter struct {
	noop.Int64Counter
	name  string
	store *meterStore
}

func (c int64Counter) Add(_ context.Context, n int64, opts ...metric.AddOption) {
	c.store.record(c.name, metric.NewAddConfig(opts).Attributes(), n, 0, false)
}

func (int64Counter) Enabled(context.Context) bool { return true }

type int64UpDownCounter struct {
	noop.Int64UpDownCounter
	name  string
	store *meterStore
}

func (c int64UpDownCounter) Add(_ context.Context, n int64, opts ...metric.AddOption) {
	c.store.record(c.name, metric.NewAddConfig(opts).Attributes(), n, 0, false)
}

func (int64UpDownCounter) Enabled(context.Context) bool { return true }

type float64Histogram struct {
	noop.Float64Histogram
	name  string
	store *meterStore
}

func (h float64Histogram) Record(_ context.Context, v float64, opts ...metric.RecordOption) {
	h.store.record(h.name, metric.NewRecordConfig(opts).Attributes(), 1, v, true)
}

func (float64Histogram) Enabled(context.Context) bool { return true }

// printMetrics prints what both workers' Locks recorded during the scenes,
// one line per metric: each value of its word attribute (respire.result,
// or respire.capability) with its count; histograms with their mean.
func printMetrics(p *printer, store *meterStore) {
	store.mu.Lock()
	defer store.mu.Unlock()
	p.line("  metrics    what the workers' Locks recorded (lease.WithMeterProvider, read back in memory):")
	for _, name := range metricOrder {
		if line := store.line(name); line != "" {
			p.line("             %-30s %s", name, line)
		}
	}
}

// line renders one metric's values, by their word attribute; st.mu is
// held.
func (st *meterStore) line(name string) string {
	counts, sums := st.counts[name], st.sums[name]
	labels := make([]string, 0, len(counts))
	for l := range counts {
		labels = append(labels, l)
	}
	slices.Sort(labels)
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		part := strings.TrimSpace(fmt.Sprintf("%s %d", l, counts[l]))
		if sum, ok := sums[l]; ok && counts[l] > 0 {
			mean := time.Duration(sum / float64(counts[l]) * float64(time.Second))
			part += fmt.Sprintf(" (mean %v)", mean.Round(10*time.Microsecond))
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// label is the value of a data point's word attribute ("" for none).
func label(set attribute.Set) string {
	for _, kv := range set.ToSlice() {
		if strings.HasPrefix(string(kv.Key), "respire.") && kv.Key != "respire.lock.key_prefix" {
			return kv.Value.String()
		}
	}
	return ""
}
