package dst

import (
	"strings"

	"github.com/respire-go/respire/conn"
)

// The broken scripts of the primitives' mutations (mutations.go).

// countingEnded is SemaphoreAcquireScript broken: it counts every member,
// ended leases included, and removes none.
var countingEnded = strings.NewReplacer(
	"redis.call('zcount', KEYS[1], '(' .. now, '+inf')", "redis.call('zcard', KEYS[1])",
	"redis.call('zremrangebyscore', KEYS[1], '-inf', now)\n", "",
).Replace(conn.SemaphoreAcquireScript)

// readerIgnoringWriter is ReadAcquireScript broken: it never looks at the
// writer key.
var readerIgnoringWriter = strings.Replace(conn.ReadAcquireScript,
	"if redis.call('exists', KEYS[1]) == 1 then return 0 end\n", "", 1)

// isScript reports whether cmd runs the script of sha (EVALSHA) or src
// (EVAL).
func isScript(cmd conn.Command, sha, src string) bool {
	return len(cmd.Args) > 1 && (cmd.Args[0] == "EVALSHA" && cmd.Args[1] == sha || cmd.Args[0] == "EVAL" && cmd.Args[1] == src)
}
