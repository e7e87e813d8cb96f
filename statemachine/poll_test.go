package statemachine

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestPollJitter_SleepsAreSpreadOverHalfToThreeHalvesOfRetryEvery: for r in
// [0, 1) the sleep is every/2 + r·every, so it lies in [every/2,
// 3·every/2), grows with r, and is RetryEvery itself for r = 0.5.
func TestPollJitter_SleepsAreSpreadOverHalfToThreeHalvesOfRetryEvery(t *testing.T) {
	for _, every := range []time.Duration{time.Millisecond, 50 * time.Millisecond, 3 * time.Second} {
		for _, p := range []Poll{{RetryEvery: every, Wait: time.Hour}, {RetryEvery: every, UntilDone: true}} {
			prev := time.Duration(0)
			for i := 0; i <= 1000; i++ {
				r := float64(i) / 1000
				if i == 1000 {
					r = 0.9999999999 // the largest r draws come close to 1, never reach it
				}
				sleep, again := p.Next(0, r)
				if !again {
					t.Fatalf("%+v: Next(0, %v) gave up with its budget unspent", p, r)
				}
				if sleep < every/2 || sleep >= every*3/2 {
					t.Fatalf("%+v: Next(0, %v) sleeps %v; want it in [%v, %v)", p, r, sleep, every/2, every*3/2)
				}
				if sleep < prev {
					t.Fatalf("%+v: Next(0, %v) sleeps %v, less than %v for a smaller r", p, r, sleep, prev)
				}
				prev = sleep
			}
			if sleep, _ := p.Next(0, 0); sleep != every/2 {
				t.Fatalf("%+v: Next(0, 0) sleeps %v; want every/2", p, sleep)
			}
			if sleep, _ := p.Next(0, 0.5); sleep != every {
				t.Fatalf("%+v: Next(0, 0.5) sleeps %v; want every", p, sleep)
			}
		}
	}
}

// TestPollJitter_ManyPollersSleepDifferentAmounts: pollers that start
// together and draw r uniformly spread their sleeps over the whole band,
// so they do not poll in lockstep.
func TestPollJitter_ManyPollersSleepDifferentAmounts(t *testing.T) {
	const every, pollers = 50 * time.Millisecond, 1000
	rng := rand.New(rand.NewPCG(1, 2))
	p := Poll{RetryEvery: every, UntilDone: true}
	distinct := map[time.Duration]bool{}
	var buckets [10]int // tenths of the band [every/2, 3·every/2)
	for range pollers {
		sleep, _ := p.Next(0, rng.Float64())
		distinct[sleep] = true
		buckets[(sleep-every/2)*10/every]++
	}
	if len(distinct) < pollers*9/10 {
		t.Fatalf("%d pollers drew only %d distinct sleeps", pollers, len(distinct))
	}
	for i, n := range buckets {
		if n < pollers/20 {
			t.Fatalf("tenth %d of the band got %d of %d sleeps; want them spread (%v)", i, n, pollers, buckets)
		}
	}
}

// TestPollJitter_TheLastSleepIsCappedByTheRemainingBudget: whatever r, a
// sleep never outlasts the remaining budget, and a spent budget stops.
func TestPollJitter_TheLastSleepIsCappedByTheRemainingBudget(t *testing.T) {
	const every = 50 * time.Millisecond
	p := Poll{Start: 10 * time.Millisecond, Wait: 100 * time.Millisecond, RetryEvery: every}
	for _, now := range []time.Duration{10 * time.Millisecond, 60 * time.Millisecond, 80 * time.Millisecond, 109 * time.Millisecond} {
		remaining := p.Wait - (now - p.Start)
		for _, r := range []float64{0, 0.25, 0.5, 0.75, 0.9999} {
			sleep, again := p.Next(now, r)
			want := min(remaining, every/2+time.Duration(float64(every)*r))
			if !again || sleep != want {
				t.Fatalf("Next(%v, %v) = %v, %v; want %v, true (remaining %v)", now, r, sleep, again, want, remaining)
			}
		}
	}
	for _, now := range []time.Duration{110 * time.Millisecond, time.Second} {
		if sleep, again := p.Next(now, 0.5); again || sleep != 0 {
			t.Fatalf("Next(%v) with the budget spent = %v, %v; want 0, false", now, sleep, again)
		}
	}
	// WithWaitUntilDone has no budget: it never stops and is never capped.
	until := Poll{Start: 10 * time.Millisecond, Wait: 100 * time.Millisecond, RetryEvery: every, UntilDone: true}
	if sleep, again := until.Next(time.Hour, 0.9999); !again || sleep < every {
		t.Fatalf("UntilDone Next(1h) = %v, %v; want a full jittered sleep", sleep, again)
	}
}

// TestDurationOptionsBounded_PollSleepsNeverOverflow: however long the
// retry interval (up to the longest time.Duration) and whatever the random
// input, a polling sleep is positive, at least half the interval, never
// more than the longest Duration: above about 194 years every/2 + r·every
// no longer fits, and a wrapped, negative sleep would make a tight SET NX
// loop. Out-of-range r (negative, above 1, NaN) counts as its nearest end.
func TestDurationOptionsBounded_PollSleepsNeverOverflow(t *testing.T) {
	const longest = time.Duration(math.MaxInt64)
	for _, every := range []time.Duration{100 * 365 * 24 * time.Hour, 195 * 365 * 24 * time.Hour, longest / 3 * 2, longest - 1, longest} {
		for _, r := range []float64{0, 0.5, 0.99, 0.9999999999, 1, -1, 2, math.NaN()} {
			for _, p := range []Poll{{RetryEvery: every, UntilDone: true}, {RetryEvery: every, Wait: longest}} {
				sleep, again := p.Next(0, r)
				if !again || sleep <= 0 || sleep < every/2 {
					t.Fatalf("%+v: Next(0, %v) = %v, %v; want a sleep in [every/2, longest], positive", p, r, sleep, again)
				}
			}
		}
	}
}
