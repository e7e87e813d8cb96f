package dst

import (
	"strings"

	"github.com/respire-go/respire/conn"
)

// The broken scripts of the primitives' mutations (mutations.go).

// countingEnded is SemaphoreAcquireScript broken: it counts every holder,
// ended leases included, and removes none.
var countingEnded = mustRewrite(conn.SemaphoreAcquireScript,
	"redis.call('zcount', KEYS[1], '(' .. now, '+inf')", "redis.call('zcount', KEYS[1], 0, '+inf')",
	"redis.call('zremrangebyscore', KEYS[1], 0, now)\n", "",
)

// readerIgnoringWriter is ReadAcquireScript broken: it never looks at the
// writer key.
var readerIgnoringWriter = mustRewrite(conn.ReadAcquireScript, "if writer then return 0 end\n", "")

// mustRewrite replaces each old with its new (pairs) in script, and panics
// when one of them is not there: a mutation that no longer changes its
// script would be "caught" by nothing.
func mustRewrite(script string, oldnew ...string) string {
	for i := 0; i+1 < len(oldnew); i += 2 {
		if !strings.Contains(script, oldnew[i]) {
			panic("dst: mutation rewrite: the script no longer contains " + oldnew[i])
		}
		script = strings.ReplaceAll(script, oldnew[i], oldnew[i+1])
	}
	return script
}

// isScript reports whether cmd runs the script of sha (EVALSHA) or src
// (EVAL).
func isScript(cmd conn.Command, sha, src string) bool {
	return len(cmd.Args) > 1 && (cmd.Args[0] == "EVALSHA" && cmd.Args[1] == sha || cmd.Args[0] == "EVAL" && cmd.Args[1] == src)
}
