package conn

// OwnerLeaseScript reads the lease left on a lock key while it still holds
// a given value (KEYS[1] = the lock key; ARGV[1] = the value a GET just
// read), without changing anything: GET, then PTTL. Replies: n >= 0 = the
// key holds ARGV[1] and has n ms left, -1 = it holds ARGV[1] and has no
// expiry, -2 = it is missing or holds another value (it changed since the
// GET). lease.Locks.Holder sends it after OwnerOp, so that the lease it
// reports is the one of the owner whose label it reports.
const OwnerLeaseScript = "if redis.call('get', KEYS[1]) ~= ARGV[1] then return -2 end\n" +
	"return redis.call('pttl', KEYS[1])"

// OwnerLeaseScriptSHA is the SHA1 of OwnerLeaseScript.
const OwnerLeaseScriptSHA = "abd709463cc4bcc87f30643530533497a72f97dd"

// OwnerLeaseOp runs OwnerLeaseScript on key for value (EVALSHA, EVAL after
// NOSCRIPT): Result.Owned reports that key still holds value, and then
// Result.RemainingMillis is its PTTL (-1: no expiry).
func OwnerLeaseOp(key, value string) Op {
	return primitiveOp(&primitiveCall{name: "owner-lease", kind: primOwnerLease, script: OwnerLeaseScript,
		sha: OwnerLeaseScriptSHA, keys: []string{key}, args: []string{value}})
}
