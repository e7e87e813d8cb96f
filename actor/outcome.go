package actor

import (
	"context"
	"sync"
)

// Outcome is a result that is decided once and read by any number of
// waiters: for example, every concurrent Release call on one handle joins the
// one release the handle performs. A waiter that gives up just stops waiting;
// the outcome is still decided for the others.
//
// Outcome is safe for concurrent use. Create it with [NewOutcome]; the zero
// value is not usable, and an Outcome must not be copied.
type Outcome[R any] struct {
	once  sync.Once
	done  chan struct{}
	value R
	err   error
}

// NewOutcome returns an undecided outcome.
func NewOutcome[R any]() *Outcome[R] {
	return &Outcome[R]{done: make(chan struct{})}
}

// Resolve decides the outcome. Only the first call has an effect; it reports
// whether this call decided it. It never blocks.
func (o *Outcome[R]) Resolve(value R, err error) bool {
	decided := false
	o.once.Do(func() {
		o.value, o.err = value, err
		close(o.done)
		decided = true
	})
	return decided
}

// Done returns a channel closed once the outcome is decided.
func (o *Outcome[R]) Done() <-chan struct{} {
	return o.done
}

// Wait blocks until the outcome is decided, ctx is done, or stopped is
// closed (pass the mailbox's Done; nil waits without it). On ctx done it
// returns context.Cause(ctx) and leaves the outcome untouched. On stopped it
// returns the outcome if already decided, else [ErrStopped].
func (o *Outcome[R]) Wait(ctx context.Context, stopped <-chan struct{}) (R, error) {
	var zero R
	select {
	case <-o.done:
		return o.value, o.err
	case <-ctx.Done():
		return zero, context.Cause(ctx)
	case <-stopped:
		select {
		case <-o.done:
			return o.value, o.err
		default:
			return zero, ErrStopped
		}
	}
}
