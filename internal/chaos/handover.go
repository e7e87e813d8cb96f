package chaos

import (
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// A release of a worker's lock may hand its key over to another worker of
// the same Locks in one script (conn.HandOverScript, rule
// PushHandsOverWithinOneLocks): the history then shows no SET NX for the
// next owner. The rules read such a run as what it did: answered :1, the
// release of ARGV[1] and the acquisition of ARGV[2] for ARGV[3] ms;
// answered :2, the acquisition of ARGV[2] of a free key; :0 changed
// nothing.

// handOverTake returns the key, next owner's token and lease of an
// executed hand-over that gave its key to the next owner.
func handOverTake(e sim.Execution) (key, token string, ttl time.Duration, ok bool) {
	a := e.Args
	if len(a) != 7 || !isHandOver(a) || a[2] != "1" ||
		!(strings.HasPrefix(e.Reply, ":1\r") || strings.HasPrefix(e.Reply, ":2\r")) {
		return "", "", 0, false
	}
	ms, err := strconv.ParseInt(a[6], 10, 64)
	if err != nil {
		return "", "", 0, false
	}
	return a[3], a[5], time.Duration(ms) * time.Millisecond, true
}

// handOverRelease returns the token an executed hand-over released
// (answered :1).
func handOverRelease(e sim.Execution) (string, bool) {
	a := e.Args
	if len(a) != 7 || !isHandOver(a) || !strings.HasPrefix(e.Reply, ":1\r") {
		return "", false
	}
	return a[4], true
}

// isHandOver reports whether args run conn.HandOverScript (EVALSHA or EVAL).
func isHandOver(a []string) bool {
	switch strings.ToUpper(a[0]) {
	case "EVALSHA":
		return strings.EqualFold(a[1], conn.HandOverScriptSHA)
	case "EVAL":
		return a[1] == conn.HandOverScript
	}
	return false
}
