package conn

import (
	"crypto/sha1"
	"encoding/hex"
)

// The scripts of guarded writes (GuardOp; listed with their keys and
// replies in docs/compatibility.md). Every one begins with the same guard,
// which decides, in the script's one atomic step, whether the writes may
// run:
//
//	KEYS[1] the lease key        ARGV[1] the lock's owner token
//	KEYS[2] the write-id record  ARGV[2] this write's id
//	KEYS[3] the fence record     ARGV[3] the lock's fencing token ("" for none)
//	                             ARGV[4] the record's TTL, ms (the lease's TTL)
//
// 1. The lease key must hold the owner token; otherwise the script answers
// 0 and writes nothing. 2. With a fencing token, the fence record (the
// largest token that wrote through this lock's counter) must not be above
// it; otherwise the error reply "STALEFENCE …" and nothing written; the
// fence record is then raised to the token. 3. The write id goes into the
// write-id record for ARGV[4] ms, the TTL of the lease the lock's handle
// counts with (its last confirmed acquisition or extension, which ran
// before the script): so the record outlives the lease key's expiry that
// the handle's deadline is an estimate of, and a caller whose reply was
// lost can read back whether the writes ran while its lease lasts. (The
// TTL is given rather than read with PTTL: one server call less per
// write, and the record lives at least as long.) Then the writes run, and
// the script answers 1.
//
// The fence record is compared as a canonical decimal string (length, then
// bytes), exact for every int64; one that is not a positive canonical
// decimal is refused with an error reply, nothing written. Redis scripts
// are not transactions: a write that fails at run time (WRONGTYPE, a value
// that is not an integer, OOM) stops the script there, and the writes
// before it stay. The allowlist (guard_writes.go) refuses every syntax
// error before sending.

// guardCheckSource is step 1. guardCheck (mutation_guard_*.go) is it in
// every real build; the respire_mutation_guard build skips it.
const guardCheckSource = "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"

// guardPrelude is steps 1 to 3.
var guardPrelude = guardCheck +
	"if ARGV[3] ~= '' then\n" +
	"  local f = redis.call('get', KEYS[3])\n" +
	"  if f and not string.match(f, '^[1-9][0-9]*$') then\n" +
	"    return redis.error_reply('ERR the guarded-write fence record does not hold a positive integer')\n" +
	"  end\n" +
	"  if f and (#f > #ARGV[3] or (#f == #ARGV[3] and f > ARGV[3])) then\n" +
	"    return redis.error_reply('" + StaleFenceCode + " the fence record is ' .. f .. ', above the fencing token ' .. ARGV[3] .. ' of this lock')\n" +
	"  end\n" +
	"  if f ~= ARGV[3] then redis.call('set', KEYS[3], ARGV[3]) end\n" +
	"end\n" +
	"redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[4])\n"

// GuardWritesScript runs allowlisted commands after the guard: ARGV[5] is
// their number, then each command is its argument count followed by its
// arguments (name first). KEYS[4…] declare every key the commands name.
// Replies: 1 = the writes ran, 0 = the lease key does not hold the token
// (nothing written), or an error reply (STALEFENCE: nothing written; any
// other: see the top of this file).
var GuardWritesScript = guardPrelude +
	"local i = 6\n" +
	"for _ = 1, tonumber(ARGV[5]) do\n" +
	"  local n = tonumber(ARGV[i])\n" +
	"  redis.call(unpack(ARGV, i + 1, i + n))\n" +
	"  i = i + n + 1\n" +
	"end\n" +
	"return 1"

// GuardWritesScriptSHA is the SHA1 of GuardWritesScript.
var GuardWritesScriptSHA = scriptSHA(GuardWritesScript)

// StaleFenceCode is the error code of a guarded write refused because the
// fence record is above the lock's fencing token: a holder with a larger
// token wrote through the lock's counter, so this lock is not the current
// one (even if its lease key still holds its owner token, which happens
// only after the counter went back: see docs/fencing.md).
const StaleFenceCode = "STALEFENCE"

// GuardScript is a user's Lua body wrapped into a guarded-write script
// (NewGuardScript). It is immutable and safe to share.
type GuardScript struct {
	body   string
	source string
	sha    string
}

// NewGuardScript wraps body, a user's Lua, into a guarded-write script: the
// guard (the top of this file) runs first, then body runs as the body of a
// Lua function whose parameters are named KEYS and ARGV and hold only the
// caller's keys and arguments (the guard's own are not in them). body's
// return value is dropped: the script answers 1 once body returned. It
// sends nothing; the script is cached on the server under its SHA1 on
// first use (EVALSHA, EVAL after NOSCRIPT).
func NewGuardScript(body string) *GuardScript {
	src := guardPrelude +
		"local keys, args = {}, {}\n" +
		"for i = 4, #KEYS do keys[i - 3] = KEYS[i] end\n" +
		"for i = 5, #ARGV do args[i - 4] = ARGV[i] end\n" +
		"local function guarded(KEYS, ARGV)\n" + body + "\nend\n" +
		"guarded(keys, args)\n" +
		"return 1"
	return &GuardScript{body: body, source: src, sha: scriptSHA(src)}
}

// Body returns the user's Lua as given.
func (s *GuardScript) Body() string { return s.body }

// Source returns the whole script sent with EVAL.
func (s *GuardScript) Source() string { return s.source }

// SHA returns the SHA1 of Source, sent with EVALSHA.
func (s *GuardScript) SHA() string { return s.sha }

func scriptSHA(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}
