package main

import (
	"testing"
	"time"
)

func TestCheckOverlaps(t *testing.T) {
	const lease = 10 * time.Second
	ms := time.Millisecond
	cases := []struct {
		name              string
		spans             []span
		overlaps, expired int
	}{
		{"disjoint", []span{{0, 1 * ms, 2 * ms}, {2 * ms, 3 * ms, 4 * ms}}, 0, 0},
		{"touching is not overlapping", []span{{0, 1 * ms, 2 * ms}, {1 * ms, 2 * ms, 3 * ms}}, 0, 0},
		{"unsorted input", []span{{5 * ms, 6 * ms, 7 * ms}, {0, 1 * ms, 2 * ms}}, 0, 0},
		{"overlap", []span{{0, 1 * ms, 3 * ms}, {1 * ms, 2 * ms, 4 * ms}}, 1, 0},
		{"nested", []span{{0, 1 * ms, 9 * ms}, {1 * ms, 2 * ms, 3 * ms}, {1 * ms, 4 * ms, 5 * ms}}, 2, 0},
		{"earlier holder outlived its lease", []span{{0, 1 * ms, lease + ms}, {lease, lease + ms/2, lease + 2*ms}}, 0, 1},
		{"overlap with a live holder while another expired", []span{
			{0, 1 * ms, lease + 5*ms}, {lease, lease + ms, lease + 6*ms}, {lease + 2*ms, lease + 3*ms, lease + 4*ms},
		}, 1, 1},
	}
	for _, c := range cases {
		overlaps, expired := checkOverlaps(c.spans, lease)
		if overlaps != c.overlaps || expired != c.expired {
			t.Errorf("%s: overlaps, expired = %d, %d; want %d, %d", c.name, overlaps, expired, c.overlaps, c.expired)
		}
	}
}

func TestGroup(t *testing.T) {
	for v, want := range map[float64]string{74120: "74,120", 1234567: "1,234,567", 123.4: "123", 12.34: "12.3", 1.234: "1.23", 8: "8", 0: "0"} {
		if got := group(v); got != want {
			t.Errorf("group(%v) = %q, want %q", v, got, want)
		}
	}
}
