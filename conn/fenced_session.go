package conn

import "context"

// FencedAcquireOp is the fenced acquisition of leaseKey for token with a
// lease of ttlMillis, counting on counterKey (FencedAcquireScript: EVALSHA,
// EVAL only after the definite NOSCRIPT reply), to run with Session.Do or
// Pool.Do like the other lock operations: on the lease key's session, the
// socket that then carries the lock's renewals and release, so that a
// clean-up delete of an abandoned acquisition queues behind the script.
// Result.Owned reports the acquisition and Result.FencingToken its token.
//
// Beyond the errors of Do: in cluster mode a pair whose keys hash to
// different slots is refused before anything is sent (NotSubmitted,
// ErrCrossSlot); a reply that is neither nil nor a valid token is a
// Definite *Error with Code "PROTOCOL" wrapping ErrMalformedFencingToken,
// after which the lease may exist (the script ran) and must be released by
// its owner token. An Uncertain outcome is never replayed: the script may
// have spent a fencing token.
func FencedAcquireOp(leaseKey, counterKey, token string, ttlMillis int64) Op {
	return Op{kind: opFenced, key: leaseKey, counter: counterKey, token: token, ttlMillis: ttlMillis}
}

// CheckFencedKeys returns the NotSubmitted *Error (ErrCrossSlot) of a fenced
// acquisition whose lease and counter keys hash to different cluster slots,
// and nil otherwise (always nil outside cluster mode). It sends nothing.
func (p *Pool) CheckFencedKeys(leaseKey, counterKey string) error {
	if p.cluster && slotOf(p.client, leaseKey) != slotOf(p.client, counterKey) {
		return &Error{Class: NotSubmitted, Op: fencedOp, Err: ErrCrossSlot}
	}
	return nil
}

// driveFenced runs a FencedAcquireOp on this session: EVALSHA, then EVAL
// after NOSCRIPT. A redirect, READONLY or a did-not-run reply is handled as
// for the other operations (see finish).
func (s *pinned) driveFenced(ctx context.Context, op Op, asking bool, route *Route) (Result, error) {
	if err := s.pool.CheckFencedKeys(op.key, op.counter); err != nil {
		return Result{}, err
	}
	f := NewFencedAcquire(op.key, op.counter, op.token, op.ttlMillis)
	for {
		reply, redisErr, err := s.exchange(ctx, fencedOp, f.Command(), asking, route)
		if err == nil {
			err = s.checkPrimary(fencedOp)
		}
		if err != nil {
			return Result{Session: s}, err
		}
		out := f.Interpret(reply)
		switch {
		case !out.Done:
			if o := s.pool.obs; o != nil && o.FallbackTaken != nil {
				o.FallbackTaken(s.node, FallbackScriptCache, false)
			}
			continue // NOSCRIPT: the script did not run; EVAL it
		case out.Redirect != nil || out.Err != nil:
			return s.finish(fencedOp, Outcome{Done: true, Err: out.Err, Redirect: out.Redirect}, redisErr)
		case out.Malformed != nil:
			return Result{Session: s}, &Error{Class: Definite, Op: fencedOp, Addr: s.node, Session: s,
				Code: "PROTOCOL", Err: out.Malformed}
		}
		return Result{Owned: out.Acquired, FencingToken: out.FencingToken, Session: s}, nil
	}
}
