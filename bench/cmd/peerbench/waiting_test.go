package main

import (
	"testing"
	"time"
)

func TestHandoffValuesMeasureFromReleaseReplyToNextAcquisition(t *testing.T) {
	ms := time.Millisecond
	holds := []handoffHold{ // out of order, as the goroutines append them
		{span: span{tried: 0, start: 10 * ms, end: 11 * ms}, released: 12 * ms},
		{span: span{tried: 0, start: 1 * ms, end: 2 * ms}, released: 3 * ms},
		{span: span{tried: 0, start: 5 * ms, end: 6 * ms}, released: 7 * ms},
	}
	before := commandStats{"set": 10, "get": 5, "info": 1}
	after := commandStats{"set": 16, "get": 7, "info": 9}
	v := handoffValues(holds, before, after, time.Second, 10*time.Second, 0)
	// hand-offs: 3 ms -> 5 ms (2 ms), 7 ms -> 10 ms (3 ms)
	// By nearest rank: p50 is the 1st of the 2 sorted samples, p99 the 2nd.
	if v["p50"] != 2000 || v["p99"] != 3000 {
		t.Errorf("p50, p99 = %v, %v µs; want 2000, 3000 (nearest rank of 2 ms and 3 ms)", v["p50"], v["p99"])
	}
	if v["commands"] != 4 || v["sets"] != 3 {
		t.Errorf("commands, sets per hand-off = %v, %v; want 4 (8 without INFO over 2), 3", v["commands"], v["sets"])
	}
	if v["overlaps"] != 0 {
		t.Errorf("overlaps = %v", v["overlaps"])
	}
}

func TestRatioTextSpansOrdersOfMagnitude(t *testing.T) {
	for _, c := range []struct {
		r    float64
		want string
	}{{1, "1.00"}, {0.07, "0.07"}, {0.0001, "1/10,000"}, {6913.69, "6,914"}, {0, "0.00"}} {
		if got := ratioText(c.r); got != c.want {
			t.Errorf("ratioText(%v) = %q; want %q", c.r, got, c.want)
		}
	}
}

func TestParseCommandStats(t *testing.T) {
	text := "# Commandstats\r\ncmdstat_set:calls=12,usec=30,usec_per_call=2.50,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_client|tracking:calls=2,usec=1\r\ncmdstat_info:calls=7,usec=9\r\n"
	got := parseCommandStats(text)
	if got["set"] != 12 || got["client|tracking"] != 2 || got.total() != 14 {
		t.Fatalf("parseCommandStats = %v, total %d; want set 12, client|tracking 2, total 14 (INFO excluded)", got, got.total())
	}
}

func TestTargetVerdict(t *testing.T) {
	tg := &target{impl: "respire-go", metric: "p50", what: "p50 ≤ 1ms", unit: "µs", max: 1000}
	if got := tg.verdict([]float64{900, 1200, 800}); got != "**Target** p50 ≤ 1ms: met (median 900 µs, worst repetition 1,200 µs)." {
		t.Errorf("verdict = %q", got)
	}
	if got := tg.verdict([]float64{1500}); got != "**Target** p50 ≤ 1ms: **missed** (median 1,500 µs, worst repetition 1,500 µs)." {
		t.Errorf("verdict = %q", got)
	}
	if got := tg.verdict(nil); got != "**Target** p50 ≤ 1ms: not measured (respire-go did not run)." {
		t.Errorf("verdict = %q", got)
	}
}

// TestPercentileIsNearestRank: the p-th percentile is the ⌈n·p/100⌉-th
// smallest sample.
func TestPercentileIsNearestRank(t *testing.T) {
	samples := func(n int) []time.Duration {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(i + 1)
		}
		return s
	}
	for _, c := range []struct {
		n, p int
		want time.Duration
	}{{100, 99, 99}, {100, 50, 50}, {200, 99, 198}, {32, 99, 32}, {1, 50, 1}, {10, 1, 1}} {
		if got := percentile(samples(c.n), c.p); got != c.want {
			t.Errorf("percentile(1..%d, %d) = %d; want %d", c.n, c.p, got, c.want)
		}
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("percentile(nil) = %d; want 0", got)
	}
}
