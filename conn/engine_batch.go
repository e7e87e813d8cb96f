package conn

import "context"

// ExtendMany implements Session: it renews many keys of this session's
// node in one pipeline; a key whose first step needs a fallback (a script
// not cached yet included) finishes on its own afterwards. Results are in
// request order. It blocks until every key has an answer or an error; a
// transport failure makes every request without a reply Uncertain
// (NotSubmitted only when nothing of the batch reached the socket). The
// batch is not reported to the observer.
func (s *session) ExtendMany(ctx context.Context, requests []ExtendRequest) []ExtendResult {
	results := make([]ExtendResult, len(requests))
	if len(requests) == 0 {
		return results
	}
	if o := s.e.obs; o != nil && o.Op != nil {
		ends := make([]func(error), len(requests))
		for i, r := range requests {
			ctx, ends[i] = o.Op(ctx, r.Renewal()) // the batch goes under every renewal's ctx (simwire: SEAM request 4, amendment)
		}
		defer func() {
			for i, end := range ends {
				end(results[i].Err)
			}
		}()
	}
	err := s.link.notSendable(ctx)
	if err == nil && s.link.drain == nil {
		err = s.link.checkIdle(ctx) // before any route is told the session: a fence meanwhile aborts them all
	}
	if err != nil {
		for i := range results {
			results[i] = ExtendResult{Result{Session: s}, s.link.notSent("extend", s, err)}
		}
		return results
	}
	b := renewBatch{ops: make([]*Operation, len(requests))}
	cmds := b.build(s, requests, results)
	if len(cmds) == 0 {
		return results
	}
	check := s.replicaCheckFor() // Sentinel: ROLE and WAIT after the renewals (rule SentinelRenewalsNeedReplicaAcks)
	renewals := len(cmds)
	cmds = append(cmds, check.commands()...)
	replies := make([]Reply, len(cmds))
	err = s.link.hand(ctx, "extend", cmds, replies, nil, s, false)
	if err == nil {
		err = s.checkPrimary("extend")
	}
	next := 0
	for i := range requests {
		if !b.sent(i) {
			continue
		}
		reply := replies[next]
		next++
		if err != nil && (reply.Kind == 0 || ClassOf(err) != Uncertain || errIsDemotion(err)) {
			results[i] = ExtendResult{Result{Session: s}, err} // no reply, none sent, or a demoted node's
			continue
		}
		results[i] = b.finish(ctx, s, i, requests[i], reply)
	}
	if check.on {
		why := error(ErrNotReplicated) // no answer: no replica count
		if err == nil {
			why = check.confirmed(s, replies[renewals:])
		}
		if why == nil && b.fellBack {
			why = check.confirmAfter(ctx, s)
		}
		if why != nil {
			notReplicated(s, requests, results, why) // nothing the primary answered is a confirmation
		}
	}
	return results
}

// errIsDemotion reports an error of checkPrimary: every reply of the batch
// came from a node that is no longer the primary.
func errIsDemotion(err error) bool {
	e, ok := err.(*Error)
	return ok && e.Err == ErrNotPrimary
}

// renewBatch is the state machines of one ExtendMany, per request: an
// Operation for a compare-and-pexpire, a ScriptCall for a holder's renewal
// (scripts is allocated only when the batch has one).
type renewBatch struct {
	ops      []*Operation
	scripts  []*ScriptCall
	fellBack bool // a request finished on its own after the pipeline (a fallback)
}

// sent reports whether request i was put in the pipeline.
func (b *renewBatch) sent(i int) bool {
	return b.ops[i] != nil || (b.scripts != nil && b.scripts[i] != nil)
}

// build makes each request's first command, recording in results the ones
// that are not sent (their Route aborted them, or their Op is not a
// renewal). The commands' arguments share one array.
func (b *renewBatch) build(s *session, requests []ExtendRequest, results []ExtendResult) []Command {
	caps := s.caps.Load()
	cmds := make([]Command, 0, len(requests))
	args := make([]string, 0, 7*len(requests))
	for i, r := range requests {
		if refused := batchRefusal(s, r); refused != nil {
			results[i] = ExtendResult{Result{Session: s}, s.link.notSent(r.Renewal().name(), s, refused)}
			continue
		}
		start := len(args)
		switch r.Op.kind {
		case 0:
			b.ops[i] = NewExtend(r.Key, r.Token, r.TTLMillis, caps)
		case opExtend:
			b.ops[i] = NewExtend(r.Op.key, r.Op.token, r.Op.ttlMillis, caps)
		default:
			if b.scripts == nil {
				b.scripts = make([]*ScriptCall, len(requests))
			}
			b.scripts[i] = &ScriptCall{call: r.Op.prim, step: StepPrimitiveEvalsha}
			cmds = append(cmds, b.scripts[i].Command())
			continue
		}
		args = b.ops[i].AppendArgs(args)
		cmds = append(cmds, Command{Args: args[start:len(args):len(args)], Key: -1})
	}
	return cmds
}

// batchRefusal is why request r may not ride in the batch (nil: it may).
func batchRefusal(s *session, r ExtendRequest) error {
	switch {
	case !r.Op.Batchable():
		return ErrNotBatchable
	case r.Op.kind == opPrimitive && r.Op.invalid() != nil:
		return r.Op.prim.invalid
	case !r.Route.Carry(s):
		return ErrAborted
	}
	return nil
}

// finish reads request i's reply from the batch; after a fallback reply
// (or NOSCRIPT) the request finishes on its own.
func (b *renewBatch) finish(ctx context.Context, s *session, i int, r ExtendRequest, reply Reply) ExtendResult {
	if o := b.ops[i]; o != nil {
		step := o.step
		out := o.Interpret(reply)
		s.learn(step, out)
		if out.Done {
			res, err := s.finish("extend", out, reply.Err)
			return ExtendResult{res, err}
		}
		b.fellBack = true
		res, err := s.drive(ctx, "extend", o, false, r.Route)
		return ExtendResult{res, err}
	}
	op, call := r.Op, b.scripts[i]
	if out := call.Interpret(reply); out.Done {
		res, err := s.primitiveOutcome(op.prim.name, out, reply.Err)
		return ExtendResult{res, err}
	}
	s.scriptFallback()
	b.fellBack = true
	res, err := s.driveScript(ctx, op, call, false, r.Route)
	return ExtendResult{res, err}
}
