package conn

import (
	"errors"
	"strconv"
)

// HandOverScript releases a mutex lock and gives it to the next owner in
// the same step (KEYS[1] = the lock key; ARGV[1] = the releasing owner's
// value, ARGV[2] = the next owner's value, ARGV[3] = its lease in ms).
// When the key holds ARGV[1], it is overwritten with ARGV[2] for ARGV[3]
// ms (reply 1: released and handed over); otherwise the next owner tries
// as SET NX PX would (reply 2: the key was free and is now the next
// owner's; 0: another owner holds it, nothing changed). The next owner's
// lease starts no earlier than the script runs, as with its own SET NX.
const HandOverScript = "if " + handOverOwnerCheck + " then\n" +
	"  redis.call('set', KEYS[1], ARGV[2], 'px', ARGV[3])\n" +
	"  return 1\n" +
	"end\n" +
	"if redis.call('set', KEYS[1], ARGV[2], 'nx', 'px', ARGV[3]) then return 2 end\n" +
	"return 0"

// HandOverScriptSHA is the SHA1 of HandOverScript.
var HandOverScriptSHA = scriptSHA(HandOverScript)

// HandOverOp runs HandOverScript (EVALSHA, EVAL after NOSCRIPT): the
// release of key by token, and the acquisition of key by next for
// ttlMillis, in one command. Result.Owned reports that token held the key
// and released it; Result.Waiting that next holds the key now (handed
// over, or taken free). It acquires: under Sentinel replica
// acknowledgements its Result.Unconfirmed is set as an acquisition's is.
// An empty token or next, or a lease that is not positive, is bad input:
// nothing is sent (Op.Invalid).
func HandOverOp(key, token, next string, ttlMillis int64) Op {
	call := &primitiveCall{name: "hand-over", kind: primHandOver, script: HandOverScript, sha: HandOverScriptSHA,
		keys: []string{key}, args: []string{token, next, strconv.FormatInt(ttlMillis, 10)}}
	if token == "" || next == "" || ttlMillis <= 0 {
		call.invalid = errInvalidHandOver
	}
	return primitiveOp(call)
}

// errInvalidHandOver is the NotSubmitted cause of a HandOverOp built with an
// empty value or a lease that is not positive.
var errInvalidHandOver = errors.New("hand-over: empty owner value or lease not positive")
