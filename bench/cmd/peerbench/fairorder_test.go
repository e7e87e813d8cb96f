package main

import (
	"testing"

	"github.com/redis/rueidis"
)

// TestQueueWatch_AWaiterLeavingBeforeASmallerTicketIsOutOfOrder: between
// two reads of the queue, waiters leaving with the smallest tickets are in
// order; one leaving while a smaller ticket stays is counted; the queue's
// counters (scores ≤ 0) are not waiters.
func TestQueueWatch_AWaiterLeavingBeforeASmallerTicketIsOutOfOrder(t *testing.T) {
	w := &queueWatch{}
	read := func(zs ...rueidis.ZScore) { w.compare(zs) }
	z := func(m string, s float64) rueidis.ZScore { return rueidis.ZScore{Member: m, Score: s} }
	read(z("", -4), z("a", 2), z("b", 4), z("c", 6), z("d", 8))
	read(z("", -5), z("c", 6), z("d", 8), z("e", 10)) // a and b, the two heads, granted
	if w.left != 2 || w.disorder != 0 {
		t.Fatalf("after the heads left: left %d, out of order %d; want 2, 0", w.left, w.disorder)
	}
	read(z("", -5), z("c", 6), z("e", 10)) // d left before c
	if w.left != 3 || w.disorder != 1 {
		t.Fatalf("after d left before c: left %d, out of order %d; want 3, 1", w.left, w.disorder)
	}
	read() // the queue deleted: everyone left, nobody stayed behind
	if w.left != 5 || w.disorder != 1 || w.reads != 4 {
		t.Fatalf("after the queue emptied: left %d, out of order %d, reads %d; want 5, 1, 4", w.left, w.disorder, w.reads)
	}
}

// TestTargetVerdict_WorstJudgesEveryRepetition: a worst target is missed
// when one repetition misses it, whatever the median.
func TestTargetVerdict_WorstJudgesEveryRepetition(t *testing.T) {
	tg := &target{impl: "respire-go-fair", metric: "disorder", what: "in order", unit: "grants", worst: true}
	if got := tg.verdict([]float64{0, 0, 1}); got != "**Target** in order: **missed** (median 0 grants, worst repetition 1 grants)." {
		t.Errorf("verdict = %q", got)
	}
	if got := tg.verdict([]float64{0, 0}); got != "**Target** in order: met (median 0 grants, worst repetition 0 grants)." {
		t.Errorf("verdict = %q", got)
	}
}
