package conn

import "context"

// Release runs a compare-and-delete on this session only. A MOVED or ASK
// reply is returned as a Definite *Error with Redirect set (the session is
// then retired); use Pool.Release to follow redirects.
func (s *Session) Release(ctx context.Context, key, token string) (Result, error) {
	return s.drive(ctx, "release", NewRelease(key, token, s.caps.Load()), false)
}

// Acquire runs SET key token NX PX ttlMillis on this session only; Owned
// reports that the key was free and is now ours. Redirects as for Release.
func (s *Session) Acquire(ctx context.Context, key, token string, ttlMillis int64) (Result, error) {
	return s.drive(ctx, "acquire", NewAcquire(key, token, ttlMillis), false)
}

// Extend runs a compare-and-pexpire on this session only (see Release).
func (s *Session) Extend(ctx context.Context, key, token string, ttlMillis int64) (Result, error) {
	return s.drive(ctx, "extend", NewExtend(key, token, ttlMillis, s.caps.Load()), false)
}

// Owner runs GET key on this session only (see Release).
func (s *Session) Owner(ctx context.Context, key string) (Result, error) {
	return s.drive(ctx, "owner", NewOwnerQuery(key), false)
}

// ExtendRequest is one renewal in a pipelined batch.
type ExtendRequest struct {
	Key       string
	Token     string
	TTLMillis int64
}

// ExtendResult is the answer to one ExtendRequest.
type ExtendResult struct {
	Result
	Err error // *Error, classified as for Extend
}

// ExtendMany renews many keys on this session in one pipelined round trip
// (DoMulti); a key whose first step needs a fallback finishes on its own
// afterwards. Results are in request order. All keys must live on this
// session's node. It blocks until every key has an answer or an error; a
// transport failure makes every unanswered request Uncertain (or
// NotSubmitted if nothing was handed off).
func (s *Session) ExtendMany(ctx context.Context, requests []ExtendRequest) []ExtendResult {
	results := make([]ExtendResult, len(requests))
	if len(requests) == 0 {
		return results
	}
	if err := s.notSendable(ctx); err != nil {
		for i := range results {
			results[i] = ExtendResult{Result{Session: s}, &Error{Class: NotSubmitted, Op: "extend", Addr: s.node, Session: s, Err: err}}
		}
		return results
	}
	caps := s.caps.Load()
	ops := make([]*Operation, len(requests))
	for i, r := range requests {
		ops[i] = NewExtend(r.Key, r.Token, r.TTLMillis, caps)
	}
	built := make([]rueidisCompleted, len(ops))
	for i, o := range ops {
		built[i] = s.build(o.Command())
	}
	sendCtx, sent := s.sendContext(ctx)
	replies := s.client.DoMulti(sendCtx, built...)
	sent()
	for i, raw := range replies {
		results[i] = s.finishPipelined(ctx, ops[i], raw)
	}
	return results
}

func (s *Session) finishPipelined(ctx context.Context, o *Operation, raw rueidisResult) ExtendResult {
	if err := raw.NonRedisError(); err != nil {
		if !cancelledByCaller(ctx, err) {
			s.pool.retire(s)
		}
		return ExtendResult{Result{Session: s}, &Error{Class: classifyTransport(err), Op: "extend", Addr: s.node, Session: s, Err: err}}
	}
	s.touch()
	reply, redisErr := toReply(raw)
	out := o.Interpret(reply)
	s.caps.Add(out.Learned)
	if out.Done {
		res, err := s.finish("extend", out, redisErr)
		return ExtendResult{res, err}
	}
	res, err := s.drive(ctx, "extend", o, false)
	return ExtendResult{res, err}
}
