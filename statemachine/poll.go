package statemachine

import "time"

// DefaultRetryEvery is the polling interval of a waiting acquisition when none is given (A6).
const DefaultRetryEvery = 50 * time.Millisecond

// Poll is the pure schedule of a waiting acquisition (A7): a fresh attempt, then sleeps of
// min(remaining budget, RetryEvery) each followed by one more attempt, until the budget is
// spent. Wait = 0 gives exactly one attempt. The zero value polls once. Poll is a value;
// copies are independent, and it is safe for concurrent use.
type Poll struct {
	Start      time.Duration // monotonic time taken before the first attempt
	Wait       time.Duration // total budget; negative is rejected by the caller before sending
	RetryEvery time.Duration // sleep between attempts; ≤ 0 means DefaultRetryEvery
}

// Next is called after an unacquired attempt completed at now. It returns the sleep before
// the next attempt, or false when the budget is spent (give up: unacquired / not-acquired
// error). It does not block.
func (p Poll) Next(now time.Duration) (sleep time.Duration, again bool) {
	remaining := p.Wait - (now - p.Start)
	if remaining <= 0 {
		return 0, false
	}
	every := p.RetryEvery
	if every <= 0 {
		every = DefaultRetryEvery
	}
	return min(remaining, every), true
}
