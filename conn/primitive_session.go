package conn

import "context"

// invalid returns the NotSubmitted *Error of a primitive Op built from bad
// input (nothing may be sent for it), and nil for every other Op.
func (o Op) invalid() error {
	if o.kind != opPrimitive || o.prim.invalid == nil {
		return nil
	}
	return &Error{Class: NotSubmitted, Op: o.prim.name, Err: o.prim.invalid}
}

// drivePrimitive runs a semaphore or read/write-lock Op on this session:
// EVALSHA, then EVAL after NOSCRIPT. A redirect, READONLY or a did-not-run
// reply is handled as for the other operations (see finish); a limit
// mismatch is a Definite *Error whose cause is the *LimitMismatchError.
func (s *pinned) drivePrimitive(ctx context.Context, op Op, asking bool, route *Route) (Result, error) {
	if err := op.invalid(); err != nil {
		return Result{}, err
	}
	return s.driveScript(ctx, op, &ScriptCall{call: op.prim, step: StepPrimitiveEvalsha}, asking, route)
}

// driveScript drives call, op's script call, from its current step.
func (s *pinned) driveScript(ctx context.Context, op Op, call *ScriptCall, asking bool, route *Route) (Result, error) {
	name := op.prim.name
	for {
		reply, redisErr, err := s.exchange(ctx, name, call.Command(), asking, route)
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
		return s.primitiveOutcome(name, out, redisErr)
	}
}

// scriptFallback reports that a script was not cached on this session's
// server (NOSCRIPT), so EVAL follows.
func (s *pinned) scriptFallback() {
	if o := s.pool.obs; o != nil && o.FallbackTaken != nil {
		o.FallbackTaken(s.node, FallbackScriptCache, false)
	}
}

// primitiveOutcome is the result of a script call's final reply.
func (s *pinned) primitiveOutcome(name string, out ScriptOutcome, redisErr error) (Result, error) {
	switch {
	case out.LimitMismatch != nil:
		if redisErr != nil {
			out.LimitMismatch.Reply = redisErr
		}
		return Result{Session: s}, &Error{Class: Definite, Op: name, Addr: s.node, Session: s,
			Code: LimitMismatchCode, Err: out.LimitMismatch}
	case out.Redirect != nil || out.Err != nil:
		return s.finish(name, Outcome{Done: true, Err: out.Err, Redirect: out.Redirect}, redisErr)
	}
	return Result{Owned: out.Owned, Waiting: out.Waiting, RemainingMillis: out.RemainingMillis,
		Holders: out.Holders, Session: s}, nil
}
