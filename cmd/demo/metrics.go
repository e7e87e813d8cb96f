package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
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

// newMeters returns a meter provider whose measurements the demo reads
// back with a manual reader (the OpenTelemetry SDK's in-memory reader; a
// service would export them instead).
func newMeters() (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	reader := sdkmetric.NewManualReader()
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), reader
}

// printMetrics prints what both workers' Locks recorded during the scenes,
// one line per metric: each value of its word attribute (respire.result,
// or respire.capability) with its count; histograms with their mean.
func printMetrics(ctx context.Context, p *printer, reader *sdkmetric.ManualReader) error {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return fmt.Errorf("reading the metrics: %w", err)
	}
	lines := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			lines[m.Name] = metricLine(m)
		}
	}
	p.line("  metrics    what the workers' Locks recorded (lease.WithMeterProvider; the SDK's ManualReader):")
	for _, name := range metricOrder {
		if line, ok := lines[name]; ok && line != "" {
			p.line("             %-30s %s", name, line)
		}
	}
	return nil
}

// metricLine renders one metric's data points, merged by their word
// attribute.
func metricLine(m metricdata.Metrics) string {
	counts := map[string]int64{}
	sums := map[string]float64{}
	switch data := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range data.DataPoints {
			counts[label(dp.Attributes)] += dp.Value
		}
	case metricdata.Histogram[float64]:
		for _, dp := range data.DataPoints {
			counts[label(dp.Attributes)] += int64(dp.Count)
			sums[label(dp.Attributes)] += dp.Sum
		}
	}
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
