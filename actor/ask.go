package actor

import "context"

// Reply is the answer slot a request message carries: a channel with a buffer
// of one, so the handler never blocks replying, even when the caller has
// stopped waiting. The zero value is a reply nobody waits for: Send on it
// does nothing. Copies share the same slot.
//
// Reply slots are deliberately not pooled. A caller that gives up (ctx done)
// leaves its slot reachable from the queued request; the handler may still
// fill it later. Returning such a slot to a pool would let that late answer
// reach the next, unrelated caller. Only a slot whose single answer has been
// received could be recycled safely, and one small allocation per request is
// cheaper than proving every handler answers exactly once.
type Reply[R any] struct {
	slot chan R
}

// NewReply returns an empty reply slot. Most callers use [Ask] instead.
func NewReply[R any]() Reply[R] {
	return Reply[R]{slot: make(chan R, 1)}
}

// Send stores the answer. It never blocks and is safe for concurrent use. It
// reports false, and drops r, when the slot already holds an answer (a
// request is answered once) or the Reply is the zero value.
func (r Reply[R]) Send(v R) bool {
	if r.slot == nil {
		return false
	}
	select {
	case r.slot <- v:
		return true
	default:
		return false
	}
}

// Wait blocks until the answer arrives, ctx is done, or stopped is closed.
// On ctx done it returns context.Cause(ctx); the request is not withdrawn and
// may still be handled — its answer is then dropped into the slot and lost.
// On stopped it returns an answer that is already there, else [ErrStopped].
func (r Reply[R]) Wait(ctx context.Context, stopped <-chan struct{}) (R, error) {
	var zero R
	select {
	case v := <-r.slot:
		return v, nil
	case <-ctx.Done():
		return zero, context.Cause(ctx)
	case <-stopped:
		select {
		case v := <-r.slot:
			return v, nil
		default:
			return zero, ErrStopped
		}
	}
}

// Ask sends the request built by request (which embeds the given Reply in a
// message) to mb and waits for its answer. It blocks until the handler
// answers, ctx is done, or mb stops.
//
// If ctx is already done, nothing is sent and Ask returns context.Cause(ctx).
// If the send fails it returns [ErrStopped] or [ErrMailboxFull] and the
// request was not accepted. Once sent, ctx cancellation only stops the
// waiting: the handler still processes the request. If mb stops before
// answering, Ask returns ErrStopped. Safe for concurrent use.
func Ask[M, R any](ctx context.Context, mb *Mailbox[M], request func(Reply[R]) M) (R, error) {
	var zero R
	if ctx.Err() != nil {
		return zero, context.Cause(ctx)
	}
	reply := NewReply[R]()
	if err := mb.Send(request(reply)); err != nil {
		return zero, err
	}
	return reply.Wait(ctx, mb.Done())
}
