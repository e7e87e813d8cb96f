package dst

import (
	"strconv"

	"github.com/respire-go/respire/conn"
)

// opRun is the checker's record of one lock operation the engine ran for
// the driver (a Transport.Do, a Session.Do, one renewal of an ExtendMany
// batch; attribute.go): its owner token and every command it wrote. The
// token maps it to the handle, or to the acquisition try, it belongs to.
type opRun struct {
	id         int64
	proc       *process
	name       string // conn.Op.Name(): "acquire", "extend", "release", "owner", "fenced-acquire"
	key        string
	token      string
	sent       int         // commands written
	replied    bool        // the last written command got a reply
	confirmed  bool        // ... and it was a fallback-confirming or redirect reply
	redirected bool        // ... a redirect (MOVED, ASK)
	last       *connection // the connection that carried the last written command
	ended      bool
	uncertain  bool   // it ended with an Uncertain error
	scriptRun  int64  // a fenced acquisition: the script run that handed out its token
	family     string // the family of its commands (attribute.go)
	reported   int    // commands the engine reported handing off for it (attribute.go)
}

// isWrite reports whether the op may change the key (every op but the
// reads: GET, a holder's lease read, a count).
func (op *opRun) isWrite() bool {
	switch op.name {
	case "owner", "semaphore-lease", "read-lease", "owner-lease", "semaphore-holders", "readers", "fair-waiters", "fair-overtaken":
		return false
	}
	return true
}

// isRelease reports whether the op is a compare-and-delete of its token
// (a key's, a waiting marker's, a holder's).
func (op *opRun) isRelease() bool {
	return op.name == "release" || op.name == "semaphore-release" || op.name == "read-release" || op.name == "fair-release" ||
		op.name == handOverName
}

// handOverName is the op of conn.HandOverOp: a release of its token and,
// in the same script, the acquisition of the next owner's (nextOf).
const handOverName = "hand-over"

// nextOf returns the next owner's token a hand-over command carries
// (ARGV[2]), "" for any other command.
func nextOf(cmd conn.Command) string {
	a := cmd.Args
	if len(a) > 3 && (a[0] == "EVALSHA" || a[0] == "EVAL") {
		if n, err := strconv.Atoi(a[2]); err == nil && 4+n < len(a) && (a[1] == conn.HandOverScriptSHA || a[1] == conn.HandOverScript) {
			return a[4+n]
		}
	}
	return ""
}

// isRenew reports whether the op is a renewal of its token's lease.
func (op *opRun) isRenew() bool {
	return op.name == "extend" || op.name == "semaphore-renew" || op.name == "read-renew"
}

// newOp records an operation the driver started; its token is read from
// its first command (run) when the caller does not know it.
func (w *world) newOp(p *process, op conn.Op, token string) *opRun {
	return &opRun{id: w.id(), proc: p, name: op.Name(), key: op.Key(), token: token}
}

// tokenOf returns the owner token a lock command carries ("" for GET).
func tokenOf(cmd conn.Command) string {
	switch a := cmd.Args; {
	case len(a) == 0:
	case a[0] == "SET" && len(a) > 2, a[0] == "DELIFEQ" && len(a) > 2:
		return a[2]
	case a[0] == "DELEX" && len(a) > 3:
		return a[3]
	case (a[0] == "EVALSHA" || a[0] == "EVAL") && len(a) > 3:
		if n, err := strconv.Atoi(a[2]); err == nil && 3+n < len(a) {
			return a[3+n]
		}
	}
	return ""
}

// wrote records that rec's latest command went out on c.
func (op *opRun) wrote(c *connection) {
	op.sent++
	op.replied, op.confirmed, op.last = false, false, c
}

// opEnded tells the checker how the driver learned the op ended (err nil:
// an answer). From an Uncertain end on, the driver knows the op may still
// run; a NotSubmitted end must be the truth.
func (w *world) opEnded(op *opRun, err error) {
	op.ended = true
	switch conn.ClassOf(err) {
	case conn.Uncertain:
		op.uncertain = true
		w.stats.Uncertain++
		w.check.onUncertain(w, op)
	case conn.NotSubmitted:
		w.stats.NotSubmitted++
		w.check.onNotSubmitted(w, op)
	}
	if w.trace.enabled {
		outcome := "answered"
		if err != nil {
			outcome = conn.ClassOf(err).String() + ": " + err.Error()
		}
		w.trace.logf(w, op.proc, "", "%s op %d ends %s", op.name, op.id, outcome)
	}
}
