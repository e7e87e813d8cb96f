package conn

import (
	"errors"
	"fmt"
	"strconv"
)

// FencedAcquireScript is the fencing-token acquisition (KEYS[1] = lease,
// KEYS[2] = counter, ARGV[1] = owner token, ARGV[2] = lease ms). In one
// atomic step it refuses identical keys, reads both keys with GET (so that a
// key of another type is refused at once with WRONGTYPE), answers nil
// (counter untouched) while the lease exists, refuses a counter that is not
// a canonical non-negative decimal or that has a TTL, INCRs the counter (an
// int64 overflow errors out), reads it back as a string with GET (no Lua
// number precision loss above 2^53), takes the lease with SET NX PX and
// returns the counter string. Every error path leaves both keys unchanged.
const FencedAcquireScript = "if KEYS[1] == KEYS[2] then return redis.error_reply('ERR lock and fencing counter keys must differ') end\n" +
	"local counter = redis.call('get', KEYS[2])\n" +
	"if redis.call('get', KEYS[1]) then return false end\n" +
	"if counter then\n" +
	"  if counter ~= '0' and not string.match(counter, '^[1-9][0-9]*$') then\n" +
	"    return redis.error_reply('ERR fencing counter must be a nonnegative canonical integer')\n" +
	"  end\n" +
	"  if redis.call('pttl', KEYS[2]) >= 0 then\n" +
	"    return redis.error_reply('ERR fencing counter must not expire')\n" +
	"  end\n" +
	"end\n" +
	"redis.call('incr', KEYS[2])\n" +
	"local token = redis.call('get', KEYS[2])\n" +
	"redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])\n" +
	"return token"

// FencedAcquireScriptSHA is the SHA1 of FencedAcquireScript (for EVALSHA).
const FencedAcquireScriptSHA = "f58adf3cce0199986d727ae6f889e0957fc00c9a"

// The steps of a fenced acquisition.
const (
	StepFencedEvalsha Step = iota + 100 // EVALSHA <fenced> 2 lease counter tok ms
	StepFencedEval                      // EVAL <fenced> 2 lease counter tok ms (after NOSCRIPT)
)

// ErrMalformedFencingToken is the cause of a fenced acquisition whose reply
// was neither nil nor a positive decimal fitting int64 (a protocol error).
// The script may have created the lease: the caller must release it with a
// compare-and-delete of its owner token.
var ErrMalformedFencingToken = errors.New("malformed fencing token reply")

// FencedAcquire is one fenced acquisition as a pure state machine: Command
// gives the next command (EVALSHA, then EVAL after NOSCRIPT), Interpret
// consumes its reply. It is not safe for concurrent use. An uncertain
// outcome (no reply) must never be followed by another Command: the script
// may have run, and replaying it would spend a second fencing token.
type FencedAcquire struct {
	leaseKey, counterKey, token string
	ttlMillis                   int64
	step                        Step
}

// NewFencedAcquire starts a fenced acquisition of leaseKey for token with a
// lease of ttlMillis, counting on counterKey. The keys are wire keys (any
// prefix already applied).
func NewFencedAcquire(leaseKey, counterKey, token string, ttlMillis int64) *FencedAcquire {
	return &FencedAcquire{leaseKey: leaseKey, counterKey: counterKey, token: token,
		ttlMillis: ttlMillis, step: StepFencedEvalsha}
}

// Step reports which implementation Command currently is.
func (f *FencedAcquire) Step() Step { return f.step }

// Command returns the command for the current step. Args[Key] is the lease
// key and Args[Key+1] the counter key (both are keys for cluster routing).
func (f *FencedAcquire) Command() Command {
	script := FencedAcquireScriptSHA
	name := "EVALSHA"
	if f.step == StepFencedEval {
		script, name = FencedAcquireScript, "EVAL"
	}
	return Command{Args: []string{name, script, "2", f.leaseKey, f.counterKey, f.token,
		strconv.FormatInt(f.ttlMillis, 10)}, Key: 3}
}

// FencedOutcome is what one reply to a fenced acquisition means.
type FencedOutcome struct {
	// Done: the acquisition is finished. Otherwise (NOSCRIPT) Command now
	// returns the EVAL to send.
	Done bool
	// Acquired: the lease was taken with FencingToken.
	Acquired     bool
	FencingToken int64
	// Err is a definite server error reply: nothing changed on the server.
	Err *ServerError
	// Malformed is set when the reply was neither nil nor a valid token
	// (it wraps ErrMalformedFencingToken): the lease may exist and must be
	// released by its owner token.
	Malformed error
	// Redirect is set on MOVED/ASK: the script did not run on this node.
	Redirect *Redirect
}

// Interpret consumes the reply to Command.
func (f *FencedAcquire) Interpret(r Reply) FencedOutcome {
	switch r.Kind {
	case ReplyError:
		if rd, ok := ParseRedirect(r.Text); ok {
			return FencedOutcome{Done: true, Redirect: &rd}
		}
		if f.step == StepFencedEvalsha && isNoScript(r.Text) {
			f.step = StepFencedEval
			return FencedOutcome{}
		}
		return FencedOutcome{Done: true, Err: newServerError(r.Text)}
	case ReplyNil:
		return FencedOutcome{Done: true}
	case ReplyBulk:
		if token, ok := ParseFencingToken(r.Text); ok {
			return FencedOutcome{Done: true, Acquired: true, FencingToken: token}
		}
	}
	return FencedOutcome{Done: true, Malformed: malformed(r)}
}

func malformed(r Reply) error {
	if r.Kind == ReplyBulk {
		return fmt.Errorf("%w: %q", ErrMalformedFencingToken, r.Text)
	}
	return fmt.Errorf("%w: reply kind %d", ErrMalformedFencingToken, r.Kind)
}

// ParseFencingToken accepts a plain positive decimal that fits in int64:
// digits only, no sign, no leading zero. "0", "-1", "01", "invalid" and
// "9223372036854775808" are refused.
func ParseFencingToken(text string) (int64, bool) {
	if text == "" || len(text) > 19 || text[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(text, 10, 64)
	return n, err == nil && n > 0
}

// ErrCrossSlot is the cause (NotSubmitted) when a cluster client is asked to
// run a fenced acquisition whose two keys, or a guarded write whose keys,
// hash to different slots.
var ErrCrossSlot = errors.New("the keys of one lock operation hash to different cluster slots")

// FencedResult is the answer of AcquireFenced.
type FencedResult struct {
	Acquired     bool
	FencingToken int64 // when Acquired
}

const fencedOp = "fenced-acquire"

// finishFenced turns the final outcome of a fenced acquisition into its
// result or *Error (redisErr is the transport's error reply, if any).
func finishFenced(out FencedOutcome, redisErr error) (FencedResult, error) {
	switch {
	case out.Err != nil:
		return FencedResult{}, definiteError(fencedOp, "", nil, out.Err, redisErr)
	case out.Malformed != nil:
		return FencedResult{}, &Error{Class: Definite, Op: fencedOp, Code: "PROTOCOL", Err: out.Malformed}
	case out.Redirect != nil: // rueidis follows redirects itself; seen only if it gave up (or on a dedicated client)
		return FencedResult{}, &Error{Class: Definite, Op: fencedOp, Code: "MOVED", Redirect: out.Redirect, Err: redisErr}
	}
	return FencedResult{Acquired: out.Acquired, FencingToken: out.FencingToken}, nil
}

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

// ErrInvalidWait is the cause (NotSubmitted) when AcquireFencedReplicated is
// asked for fewer than 1 replica or a WAIT timeout under 1 ms. WAIT 0
// would not wait at all and a WAIT timeout of 0 blocks forever, so neither
// is allowed.
var ErrInvalidWait = errors.New("WAIT needs at least 1 replica and a timeout of at least 1 ms")

// ErrWaitStopped is the cause (Uncertain) of a replicated fenced
// acquisition whose dedicated connection was closed because its stop
// context ended while the script and WAIT were on the wire: the script may
// have run. Before anything was written the error is NotSubmitted with this
// cause.
var ErrWaitStopped = errors.New("dedicated connection closed by its owner while WAIT was pending")

// ReplicatedFencedResult is the answer of AcquireFencedReplicated: the
// script's result and, when the lease was acquired, what WAIT said about the
// script's write.
type ReplicatedFencedResult struct {
	FencedResult
	// Acknowledged is WAIT's reply when Acquired and WaitErr is nil: the
	// number of replicas that acknowledged every write of the connection
	// that ran the script, its counter increment included. It can be lower
	// than the number asked for (WAIT timed out) and higher (WAIT answers
	// with every replica that had acknowledged).
	Acknowledged int64
	// WaitErr is set when Acquired and WAIT gave no count: a *Error that is
	// Definite (an error reply, or a reply that is not a non-negative
	// integer; Code "PROTOCOL") or Uncertain (the connection failed after
	// the script's reply arrived). Either way the increment's replication
	// is unknown.
	WaitErr error
}

const waitOp = "wait"

// waitCount interprets WAIT's reply: a non-negative integer is the count;
// an error reply is a Definite *Error (no error text is matched: every one
// means "no count"); anything else is a Definite protocol error.
func waitCount(r Reply, redisErr error) (int64, error) {
	switch {
	case r.Kind == ReplyInt && r.Int >= 0:
		return r.Int, nil
	case r.Kind == ReplyError:
		return 0, definiteError(waitOp, "", nil, newServerError(r.Text), redisErr)
	}
	return 0, &Error{Class: Definite, Op: waitOp, Code: "PROTOCOL",
		Err: fmt.Errorf("WAIT replied with kind %d, not a non-negative integer", r.Kind)}
}
