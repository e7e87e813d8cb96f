//go:build !respire_mutation_handover

package conn

// handOverOwnerCheck is the hand-over script's compare: the key is handed
// over only while it holds the releaser's value, in every real build. The
// deterministic simulator and the chaos campaign are checked against a
// build that breaks this on purpose (mutation_handover_on.go).
const handOverOwnerCheck = "redis.call('get', KEYS[1]) == ARGV[1]"
