package conn

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
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

// AcquireFenced runs the fenced acquisition on the ordinary client: EVALSHA,
// then EVAL only after the definite NOSCRIPT reply. It blocks for one or two
// round trips; rueidis follows cluster redirects. Errors are *Error values:
// NotSubmitted (ctx already done, cross-slot keys in cluster mode: nothing
// sent), Uncertain (the script may have run; it is never replayed, so the
// token may be spent and the lease may exist until it expires), or Definite
// (a server error reply: both keys unchanged; or a malformed success reply,
// whose cause wraps ErrMalformedFencingToken: the lease may exist and the
// caller must release it by token).
func AcquireFenced(ctx context.Context, client rueidis.Client, leaseKey, counterKey, token string, ttlMillis int64) (FencedResult, error) {
	if err := checkFenced(ctx, client, leaseKey, counterKey); err != nil {
		return FencedResult{}, err
	}
	f := NewFencedAcquire(leaseKey, counterKey, token, ttlMillis)
	for {
		result := client.Do(ctx, buildFenced(client.B(), f.Command()))
		if err := result.NonRedisError(); err != nil {
			return FencedResult{}, &Error{Class: ClassifyTransport(err), Op: fencedOp, Err: err}
		}
		reply, redisErr := toReply(result)
		out := f.Interpret(reply)
		if !out.Done {
			continue
		}
		return finishFenced(out, redisErr)
	}
}

const fencedOp = "fenced-acquire"

// checkFenced refuses, before anything is sent, a fenced acquisition whose
// ctx is already done or whose keys hash to different cluster slots.
func checkFenced(ctx context.Context, client rueidis.Client, leaseKey, counterKey string) error {
	if err := ctx.Err(); err != nil {
		return &Error{Class: NotSubmitted, Op: fencedOp, Err: err}
	}
	if client.Mode() == rueidis.ClientModeCluster && slotOf(client, leaseKey) != slotOf(client, counterKey) {
		return &Error{Class: NotSubmitted, Op: fencedOp, Err: ErrCrossSlot}
	}
	return nil
}

// finishFenced turns the final outcome of a fenced acquisition into its
// result or *Error (redisErr is the transport's error reply, if any).
func finishFenced(out FencedOutcome, redisErr error) (FencedResult, error) {
	switch {
	case out.Err != nil:
		return FencedResult{}, definite(fencedOp, "", nil, out.Err, redisErr)
	case out.Malformed != nil:
		return FencedResult{}, &Error{Class: Definite, Op: fencedOp, Code: "PROTOCOL", Err: out.Malformed}
	case out.Redirect != nil: // rueidis follows redirects itself; seen only if it gave up (or on a dedicated client)
		return FencedResult{}, &Error{Class: Definite, Op: fencedOp, Code: "MOVED", Redirect: out.Redirect, Err: redisErr}
	}
	return FencedResult{Acquired: out.Acquired, FencingToken: out.FencingToken}, nil
}

// buildFenced marks both keys of the fenced command as keys.
func buildFenced(b rueidis.Builder, cmd Command) rueidis.Completed {
	return b.Arbitrary(cmd.Args[:cmd.Key]...).Keys(cmd.Args[cmd.Key], cmd.Args[cmd.Key+1]).
		Args(cmd.Args[cmd.Key+2:]...).Build()
}

func slotOf(client rueidis.Client, key string) uint16 {
	probe := client.B().Get().Key(key).Build()
	return probe.Slot()
}
