package conn

import (
	"context"

	"github.com/respire-go/respire/capstore"
)

// Do implements Session: op runs on this session only, through its
// fallback steps. route, when not nil, is told this session right before
// each hand-off and may stop the operation (NotSubmitted, ErrAborted). A
// MOVED or ASK reply is returned as a Definite *Error with Redirect set
// (the session is then retired); Engine.Do follows redirects. It blocks
// until a definite answer or an error; after an Uncertain error the
// command may have run and is never replayed.
func (s *session) Do(ctx context.Context, op Op, route *Route) (res Result, err error) {
	if o := s.e.obs; o != nil && o.Op != nil {
		var end func(error)
		ctx, end = o.Op(ctx, op)
		defer func() { end(err) }()
	}
	res, err = s.run(ctx, op, false, route)
	if err == nil {
		err = s.confirmRenewal(ctx, op, res) // Sentinel: a renewal needs its replicas' acknowledgement
		res = s.confirmAcquisition(ctx, op, res)
	}
	return res, err
}

// run drives op on this session (after ASKING when asking).
func (s *session) run(ctx context.Context, op Op, asking bool, route *Route) (Result, error) {
	switch op.kind {
	case opFenced:
		return s.driveFenced(ctx, op, asking, route)
	case opPrimitive:
		if err := op.invalid(); err != nil {
			return Result{}, err
		}
		return s.driveScript(ctx, op, &ScriptCall{call: op.prim, step: StepPrimitiveEvalsha}, asking, route)
	}
	o, _ := op.Operation(s.caps.Load())
	return s.drive(ctx, op.name(), &o, asking, route)
}

// drive runs one Operation on this session through its fallback steps.
func (s *session) drive(ctx context.Context, op string, o *Operation, asking bool, route *Route) (Result, error) {
	for {
		reply, err := s.exchangeOne(ctx, op, o, Command{}, asking, route)
		if err == nil {
			err = s.checkPrimary(op)
		}
		if err != nil {
			return Result{Session: s}, err
		}
		step := o.step
		out := o.Interpret(reply)
		s.learn(step, out)
		if out.Done {
			return s.finish(op, out, reply.Err)
		}
	}
}

// finish is the result of an operation's final reply: a redirect retires
// the session (the command did not run here), READONLY too (not a primary
// any more), a reply that says the node cannot serve the slot now marks the
// slot map stale (not OOM, LOADING, BUSY or NOREPLICAS: those say nothing
// about who serves the slot).
func (s *session) finish(op string, out Outcome, clientErr error) (Result, error) {
	if out.Redirect != nil {
		s.e.retireSession(s, RetiredRedirect)
		e := s.definite(op, out.Err, clientErr)
		if out.Err == nil {
			e.Code = "MOVED"
			if out.Redirect.Ask {
				e.Code = "ASK"
			}
		}
		e.Redirect = out.Redirect
		return Result{Session: s}, e
	}
	if out.Err != nil {
		if IsReadOnlyReply(out.Err.Message) {
			s.e.retireSession(s, RetiredReadOnly)
		}
		if slotUnservedReply(out.Err.Message) {
			s.e.markSlotsStale()
		}
		return Result{Session: s}, s.definite(op, out.Err, clientErr)
	}
	return Result{Owned: out.Owned, Token: out.Value, Session: s}, nil
}

// definite builds a Definite *Error whose cause is the client's own error
// of the reply when it has one (so errors.As to the client's type works).
func (s *session) definite(op string, serverErr *ServerError, clientErr error) *Error {
	return definiteError(op, s.node, s, serverErr, clientErr)
}

// definiteError is the Definite *Error of a server error reply.
func definiteError(op, node string, s Session, serverErr *ServerError, clientErr error) *Error {
	e := &Error{Class: Definite, Op: op, Addr: node, Session: s, Err: clientErr}
	if serverErr != nil {
		e.Code = serverErr.Code
		if clientErr == nil {
			e.Err = serverErr
		}
	}
	if e.Err == nil {
		e.Err = ErrServerReply
	}
	return e
}

// learn adds what a reply confirmed to the session's capabilities and
// reports a fallback taken from step (when the operation is not done).
func (s *session) learn(step Step, out Outcome) {
	added := s.caps.AddNew(out.Learned)
	if out.Done {
		return
	}
	if o := s.e.obs; o != nil && o.FallbackTaken != nil {
		o.FallbackTaken(s.node, FallbackOf(step), added&capstore.FallbackBits != 0)
	}
}

// checkPrimary is called after every reply on a Sentinel client's
// session: a reply from a node that stopped being the primary proves
// nothing, since the new primary does not see that node's later writes. It
// retires and demotes such a session and returns an Uncertain *Error.
func (s *session) checkPrimary(op string) error {
	if s.e.mode != ModeSentinel || s.e.IsPrimary(s.node) {
		return nil
	}
	s.demoted.Store(true)
	s.e.retireSession(s, RetiredDemoted)
	return &Error{Class: Uncertain, Op: op, Addr: s.node, Session: s, Err: ErrNotPrimary}
}

// driveScript drives call, op's script call, from its current step:
// EVALSHA, then EVAL after NOSCRIPT. A redirect, READONLY or a did-not-run
// reply is handled as for the other operations (see finish); a limit
// mismatch is a Definite *Error whose cause is the *LimitMismatchError.
func (s *session) driveScript(ctx context.Context, op Op, call *ScriptCall, asking bool, route *Route) (Result, error) {
	name := op.prim.name
	for {
		reply, err := s.exchangeOne(ctx, name, nil, call.Command(), asking, route)
		if err == nil {
			err = s.checkPrimary(name)
		}
		if err != nil {
			return Result{Session: s}, err
		}
		out := call.Interpret(reply)
		if !out.Done {
			s.scriptFallback()
			continue // NOSCRIPT: the script did not run; EVAL it
		}
		return s.primitiveOutcome(name, out, reply.Err)
	}
}

// scriptFallback reports that a script was not cached on this session's
// server (NOSCRIPT), so EVAL follows.
func (s *session) scriptFallback() {
	if o := s.e.obs; o != nil && o.FallbackTaken != nil {
		o.FallbackTaken(s.node, FallbackScriptCache, false)
	}
}

// primitiveOutcome is the result of a script call's final reply.
func (s *session) primitiveOutcome(name string, out ScriptOutcome, clientErr error) (Result, error) {
	switch {
	case out.LimitMismatch != nil:
		if clientErr != nil {
			out.LimitMismatch.Reply = clientErr
		}
		return Result{Session: s}, &Error{Class: Definite, Op: name, Addr: s.node, Session: s,
			Code: LimitMismatchCode, Err: out.LimitMismatch}
	case out.Redirect != nil || out.Err != nil:
		return s.finish(name, Outcome{Done: true, Err: out.Err, Redirect: out.Redirect}, clientErr)
	}
	return Result{Owned: out.Owned, Waiting: out.Waiting, RemainingMillis: out.RemainingMillis,
		Holders: out.Holders, Session: s}, nil
}

// driveFenced runs a FencedAcquireOp on this session: EVALSHA, then EVAL
// after NOSCRIPT.
func (s *session) driveFenced(ctx context.Context, op Op, asking bool, route *Route) (Result, error) {
	if err := s.e.CheckFencedKeys(op.key, op.counter); err != nil {
		return Result{}, err
	}
	f := NewFencedAcquire(op.key, op.counter, op.token, op.ttlMillis)
	for {
		reply, err := s.exchangeOne(ctx, fencedOp, nil, f.Command(), asking, route)
		if err == nil {
			err = s.checkPrimary(fencedOp)
		}
		if err != nil {
			return Result{Session: s}, err
		}
		out := f.Interpret(reply)
		switch {
		case !out.Done:
			s.scriptFallback()
			continue // NOSCRIPT: the script did not run; EVAL it
		case out.Redirect != nil || out.Err != nil:
			return s.finish(fencedOp, Outcome{Done: true, Err: out.Err, Redirect: out.Redirect}, reply.Err)
		case out.Malformed != nil:
			return Result{Session: s}, &Error{Class: Definite, Op: fencedOp, Addr: s.node, Session: s,
				Code: "PROTOCOL", Err: out.Malformed}
		}
		return Result{Owned: out.Acquired, FencingToken: out.FencingToken, Session: s}, nil
	}
}

// ProbeKill implements Session: it checks that this session's user may run
// CLIENT KILL by sending CLIENT KILL ID <own id> SKIPME yes on the session
// itself (it kills nothing and answers :0). nil means permitted. Without an
// identity it returns ErrNoIdentity (NotSubmitted) and sends nothing. It
// blocks until the reply.
func (s *session) ProbeKill(ctx context.Context) error {
	id, ok := s.Identity()
	if !ok {
		return &Error{Class: NotSubmitted, Op: "probe", Addr: s.node, Session: s, Err: ErrNoIdentity}
	}
	reply, err := s.exchangeOne(ctx, "probe", nil, ProbeKillCommand(id.ID), false, nil)
	if err != nil {
		return err
	}
	if reply.Kind == ReplyError {
		return s.definite("probe", newServerError(reply.Text), reply.Err)
	}
	return nil
}

// Release runs ReleaseOp on this session only (see Do).
func (s *session) Release(ctx context.Context, key, token string) (Result, error) {
	return s.Do(ctx, ReleaseOp(key, token), nil)
}

// Acquire runs AcquireOp on this session only (see Do).
func (s *session) Acquire(ctx context.Context, key, token string, ttlMillis int64) (Result, error) {
	return s.Do(ctx, AcquireOp(key, token, ttlMillis), nil)
}

// Extend runs ExtendOp on this session only (see Do).
func (s *session) Extend(ctx context.Context, key, token string, ttlMillis int64) (Result, error) {
	return s.Do(ctx, ExtendOp(key, token, ttlMillis), nil)
}

// Owner runs OwnerOp on this session only (see Do).
func (s *session) Owner(ctx context.Context, key string) (Result, error) {
	return s.Do(ctx, OwnerOp(key), nil)
}

// Release deletes key if it holds token (ReleaseOp, see Engine.Do).
func (e *Engine) Release(ctx context.Context, key, token string) (Result, error) {
	return e.Do(ctx, ReleaseOp(key, token), nil)
}

// Extend sets key's expiry to ttlMillis from now if it holds token
// (ExtendOp, see Engine.Do). A missing, expired or replaced key is never
// created or changed.
func (e *Engine) Extend(ctx context.Context, key, token string, ttlMillis int64) (Result, error) {
	return e.Do(ctx, ExtendOp(key, token, ttlMillis), nil)
}

// Owner reads key's owner token with GET on its primary's session
// (OwnerOp, see Engine.Do).
func (e *Engine) Owner(ctx context.Context, key string) (Result, error) {
	return e.Do(ctx, OwnerOp(key), nil)
}

// Acquire sends SET key token NX PX ttlMillis on the key's node session,
// the socket that also carries the lock's release and renewals (AcquireOp,
// see Engine.Do).
func (e *Engine) Acquire(ctx context.Context, key, token string, ttlMillis int64) (Result, error) {
	return e.Do(ctx, AcquireOp(key, token, ttlMillis), nil)
}
