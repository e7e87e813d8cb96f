package conn

import (
	"context"
	"errors"
)

// opKind names the lock operation an Op runs.
type opKind uint8

const (
	opAcquire opKind = iota + 1
	opExtend
	opRelease
	opOwner
	opFenced
	opPrimitive // a semaphore or read/write-lock script (primitive_keys.go)
)

// Op is one lock operation to run with Session.Do or Pool.Do: build it with
// AcquireOp, FencedAcquireOp, ExtendOp, ReleaseOp or OwnerOp, or with the
// methods of Semaphore and RWLock. Keys are wire keys (any prefix already
// applied). It is a small value; copies are independent.
type Op struct {
	kind      opKind
	key       string
	counter   string // FencedAcquireOp only: the fencing counter key
	token     string
	ttlMillis int64
	prim      *primitiveCall // opPrimitive only (immutable, shared by copies)
}

// AcquireOp is SET key token NX PX ttlMillis (Result.Owned = acquired).
func AcquireOp(key, token string, ttlMillis int64) Op {
	return Op{kind: opAcquire, key: key, token: token, ttlMillis: ttlMillis}
}

// ExtendOp is a compare-and-pexpire of key for token to ttlMillis from now:
// SET IFEQ PX, or the Lua script where the session has learned that
// conditional SET is unsupported.
func ExtendOp(key, token string, ttlMillis int64) Op {
	return Op{kind: opExtend, key: key, token: token, ttlMillis: ttlMillis}
}

// ReleaseOp is a compare-and-delete of key for token: DELEX, DELIFEQ or Lua,
// as the session's capabilities allow.
func ReleaseOp(key, token string) Op { return Op{kind: opRelease, key: key, token: token} }

// OwnerOp is GET key (Result.Owned = found, Result.Token = the owner token).
func OwnerOp(key string) Op { return Op{kind: opOwner, key: key} }

// name is the Op field of the *Error values this operation returns.
func (o Op) name() string {
	if o.kind == opPrimitive {
		return o.prim.name
	}
	return [...]string{"", "acquire", "extend", "release", "owner", fencedOp}[o.kind]
}

// operation builds the pure protocol state machine for o on a session with
// s's capabilities. It returns a value, so that a caller that does not keep
// it (drive) allocates nothing for it.
func (o Op) operation(s *pinned) Operation {
	switch o.kind {
	case opAcquire:
		return Operation{key: o.key, token: o.token, ttlMillis: o.ttlMillis, step: StepAcquire}
	case opExtend:
		return *NewExtend(o.key, o.token, o.ttlMillis, s.caps.Load())
	case opRelease:
		return *NewRelease(o.key, o.token, s.caps.Load())
	}
	return Operation{key: o.key, step: StepGet}
}

// Do runs op on this session only, through its fallback steps. route, when
// not nil, is told this session right before each hand-off and may stop the
// operation (NotSubmitted, ErrAborted). A MOVED or ASK reply is returned as
// a Definite *Error with Redirect set (the session is then retired); use
// Pool.Do to follow redirects. It blocks until a definite answer or an
// error; after an Uncertain error the command may have run and is never
// replayed.
func (s *pinned) Do(ctx context.Context, op Op, route *Route) (Result, error) {
	return s.run(ctx, op, false, route)
}

// run drives op on this session (after ASKING when asking).
func (s *pinned) run(ctx context.Context, op Op, asking bool, route *Route) (Result, error) {
	switch op.kind {
	case opFenced:
		return s.driveFenced(ctx, op, asking, route)
	case opPrimitive:
		return s.drivePrimitive(ctx, op, asking, route)
	}
	o := op.operation(s)
	return s.drive(ctx, op.name(), &o, asking, route)
}

// Release runs ReleaseOp on this session only (see Do).
func (s *pinned) Release(ctx context.Context, key, token string) (Result, error) {
	return s.Do(ctx, ReleaseOp(key, token), nil)
}

// Acquire runs AcquireOp on this session only (see Do).
func (s *pinned) Acquire(ctx context.Context, key, token string, ttlMillis int64) (Result, error) {
	return s.Do(ctx, AcquireOp(key, token, ttlMillis), nil)
}

// Extend runs ExtendOp on this session only (see Do).
func (s *pinned) Extend(ctx context.Context, key, token string, ttlMillis int64) (Result, error) {
	return s.Do(ctx, ExtendOp(key, token, ttlMillis), nil)
}

// Owner runs OwnerOp on this session only (see Do).
func (s *pinned) Owner(ctx context.Context, key string) (Result, error) {
	return s.Do(ctx, OwnerOp(key), nil)
}

// ExtendRequest is one renewal in a pipelined batch. Route, when not nil, is
// told the session before the batch is handed off and may drop this request
// from it (NotSubmitted, ErrAborted).
type ExtendRequest struct {
	Key       string
	Token     string
	TTLMillis int64
	// Op, when set, is the renewal sent instead of the compare-and-pexpire
	// of Key for Token (Key, Token and TTLMillis are then unused): a
	// semaphore permit's (Semaphore.RenewOp), a read hold's
	// (RWLock.ReadRenewOp) or any ExtendOp. It goes in the same pipeline as
	// the batch's other renewals. Any other Op is refused, NotSubmitted
	// (ErrNotBatchable). The zero Op is unset.
	Op    Op
	Route *Route
}

// ErrNotBatchable is the NotSubmitted cause of an ExtendRequest whose Op is
// not a renewal (an acquisition, a release, a read).
var ErrNotBatchable = errors.New("not a renewal: it cannot ride in a batch of renewals")

// Renewal returns the Op the request sends: Op when set, else
// ExtendOp(Key, Token, TTLMillis). Use it to send the request again on its
// own (after a redirect).
func (r ExtendRequest) Renewal() Op {
	if r.Op.kind != 0 {
		return r.Op
	}
	return ExtendOp(r.Key, r.Token, r.TTLMillis)
}

// Batchable reports whether an Op may ride in a batch of renewals (see
// ExtendRequest.Op).
func (o Op) Batchable() bool {
	return o.kind == 0 || o.kind == opExtend || (o.kind == opPrimitive &&
		(o.prim.kind == primOwned && o.prim.sha == HolderRenewScriptSHA || o.prim.kind == primFairRenew))
}

// ExtendResult is the answer to one ExtendRequest.
type ExtendResult struct {
	Result
	Err error // *Error, classified as for Extend (or as the request's Op)
}

// ExtendMany renews many keys on this session in one pipelined round trip
// (DoMulti); a key whose first step needs a fallback (a script not cached
// yet included) finishes on its own afterwards. Results are in request
// order. All keys must live on this session's node. It blocks until every
// key has an answer or an error; a transport failure makes every request
// handed off Uncertain (NotSubmitted only when rueidis proves nothing was
// written, see ClassifyTransport).
func (s *pinned) ExtendMany(ctx context.Context, requests []ExtendRequest) []ExtendResult {
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
	b := renewalBatch{ops: make([]*Operation, len(requests))}
	built := b.build(s, requests, results)
	if len(built) == 0 {
		return results
	}
	sendCtx, sent := s.sendContext(ctx)
	replies := s.client.DoMulti(sendCtx, built...)
	sent()
	if err := s.checkPrimary("extend"); err != nil {
		for i := range requests {
			if b.sent(i) {
				results[i] = ExtendResult{Result{Session: s}, err}
			}
		}
		return results
	}
	next := 0
	for i := range requests {
		switch {
		case b.ops[i] != nil:
			results[i] = s.finishPipelined(ctx, b.ops[i], replies[next], requests[i].Route)
		case b.scripts != nil && b.scripts[i] != nil:
			results[i] = s.finishPipelinedScript(ctx, requests[i].Op, b.scripts[i], replies[next], requests[i].Route)
		default:
			continue
		}
		next++
	}
	return results
}

// renewalBatch is the state machines of one ExtendMany, per request: an
// Operation for a compare-and-pexpire, a ScriptCall for a holder's renewal
// (scripts is allocated only when the batch has one).
type renewalBatch struct {
	ops     []*Operation
	scripts []*ScriptCall
}

// sent reports whether request i was put in the pipeline.
func (b *renewalBatch) sent(i int) bool {
	return b.ops[i] != nil || (b.scripts != nil && b.scripts[i] != nil)
}

// build makes each request's first command, recording in results the ones
// that are not sent (their Route aborted them, or their Op is not a
// renewal).
func (b *renewalBatch) build(s *pinned, requests []ExtendRequest, results []ExtendResult) []rueidisCompleted {
	caps := s.caps.Load()
	built := make([]rueidisCompleted, 0, len(requests))
	for i, r := range requests {
		var refused error
		switch {
		case !r.Op.Batchable():
			refused = ErrNotBatchable
		case r.Op.kind == opPrimitive && r.Op.invalid() != nil:
			refused = r.Op.prim.invalid
		case !r.Route.carry(s):
			refused = ErrAborted
		}
		if refused != nil {
			results[i] = ExtendResult{Result{Session: s}, &Error{Class: NotSubmitted, Op: r.Renewal().name(), Addr: s.node, Session: s, Err: refused}}
			continue
		}
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
			built = append(built, buildCommand(s.client.B(), b.scripts[i].Command()))
			continue
		}
		built = append(built, buildStep(s.client.B(), b.ops[i]))
	}
	return built
}

func (s *pinned) finishPipelined(ctx context.Context, o *Operation, raw rueidisResult, route *Route) ExtendResult {
	if err := raw.NonRedisError(); err != nil {
		return ExtendResult{Result{Session: s}, s.transportError(ctx, "extend", err)}
	}
	s.touch()
	reply, redisErr := toReply(raw)
	step := o.step
	out := o.Interpret(reply)
	s.learn(step, out)
	if out.Done {
		res, err := s.finish("extend", out, redisErr)
		return ExtendResult{res, err}
	}
	res, err := s.drive(ctx, "extend", o, false, route)
	return ExtendResult{res, err}
}

// finishPipelinedScript reads a holder renewal's reply from a batch; after
// NOSCRIPT (the script did not run) it finishes on its own with EVAL.
func (s *pinned) finishPipelinedScript(ctx context.Context, op Op, call *ScriptCall, raw rueidisResult, route *Route) ExtendResult {
	name := op.prim.name
	if err := raw.NonRedisError(); err != nil {
		return ExtendResult{Result{Session: s}, s.transportError(ctx, name, err)}
	}
	s.touch()
	reply, redisErr := toReply(raw)
	if out := call.Interpret(reply); out.Done {
		res, err := s.primitiveOutcome(name, out, redisErr)
		return ExtendResult{res, err}
	}
	s.scriptFallback()
	res, err := s.driveScript(ctx, op, call, false, route)
	return ExtendResult{res, err}
}
