package statemachine

import (
	"math"
	"time"
)

// DefaultRetryEvery is the polling interval of a waiting acquisition when none is given (rule WaitBudget).
const DefaultRetryEvery = 50 * time.Millisecond

// Poll is the pure schedule of a waiting acquisition: a fresh attempt, then sleeps of
// about RetryEvery each followed by one more attempt, until the budget is spent. Sleeps are
// spread uniformly over [RetryEvery/2, 3·RetryEvery/2) by a random input, so contenders that
// start together do not poll in lockstep; the last sleep is cut to the remaining budget.
// Wait = 0 gives exactly one attempt; UntilDone ignores Wait and polls until the caller's
// ctx ends. The zero value polls once. Poll is a value; copies are independent, and it is
// safe for concurrent use.
type Poll struct {
	Start      time.Duration // monotonic time taken before the first attempt
	Wait       time.Duration // total budget; negative is rejected by the caller before sending
	RetryEvery time.Duration // mean sleep between attempts; ≤ 0 means DefaultRetryEvery
	UntilDone  bool          // no budget: the caller's ctx ends the wait
}

// Next is called after an unacquired attempt completed at now, with r a random number in
// [0, 1) (0.5 gives exactly RetryEvery). It returns the sleep before the next attempt, or
// false when the budget is spent (give up: unacquired / not-acquired error). It does not
// block.
func (p Poll) Next(now time.Duration, r float64) (sleep time.Duration, again bool) {
	every := p.RetryEvery
	if every <= 0 {
		every = DefaultRetryEvery
	}
	sleep = jittered(every, r)
	if p.UntilDone {
		return sleep, true
	}
	remaining := p.Wait - (now - p.Start)
	if remaining <= 0 {
		return 0, false
	}
	return min(remaining, sleep), true
}

// jittered is every/2 + r·every with r clamped to [0, 1] (NaN counts as 0), saturated at
// the longest time.Duration: for an interval above about 194 years the sum no longer fits,
// and a wrapped, negative sleep would turn the wait into a tight loop (rule
// DurationOptionsBounded). It is pure.
func jittered(every time.Duration, r float64) time.Duration {
	if !(r > 0) {
		r = 0
	}
	r = min(r, 1)
	extra := every
	if f := float64(every) * r; f < float64(every) { // float64(every) may round up: convert only what fits
		extra = min(time.Duration(f), every)
	}
	half := every / 2
	if extra > math.MaxInt64-half {
		return math.MaxInt64
	}
	return half + extra
}
