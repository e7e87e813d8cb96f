package lease

import "time"

// MaxTTL is the longest lease duration accepted anywhere (about 100 years):
// a longer one is refused with ErrInvalidTTL before anything is sent, so
// that no arithmetic on a lease — deadlines, renewal times, milliseconds
// on the wire — can overflow time.Duration. It bounds every other duration
// an option takes too (WithWait, WithRetryEvery, WithCommandTimeout,
// WithIdleCheck, WithDriftMargin's floor; a longer one is refused with
// ErrInvalidOption), so that jittered sleeps, margins and budgets computed
// from them cannot overflow either (rule DurationOptionsBounded).
const MaxTTL = 100 * 365 * 24 * time.Hour

// ttlMillis converts a lease duration to the whole milliseconds sent with
// PX, rounding a fractional millisecond up (1ns → 1ms, 30s+1ns → 30001ms).
// A duration that is zero, negative or longer than MaxTTL is rejected with
// ErrInvalidTTL before anything is sent.
func ttlMillis(ttl time.Duration) (int64, error) {
	if ttl <= 0 || ttl > MaxTTL {
		return 0, ErrInvalidTTL
	}
	ms := int64(ttl / time.Millisecond)
	if ttl%time.Millisecond != 0 {
		ms++
	}
	return ms, nil
}

// normalizeTTL returns the duration actually applied: ttl rounded up to
// whole milliseconds.
func normalizeTTL(ttl time.Duration) (time.Duration, error) {
	ms, err := ttlMillis(ttl)
	if err != nil {
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond, nil
}
