package dst

import (
	"fmt"
	"strings"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// Violation is one broken invariant.
type Violation struct {
	Invariant int           // 0-9, as numbered in the package's invariants list
	At        time.Duration // virtual time
	Message   string
}

// String renders the violation with its virtual time.
func (v Violation) String() string {
	return fmt.Sprintf("invariant %d at %.3fms: %s", v.Invariant, float64(v.At)/1e6, v.Message)
}

// checker holds the invariants (doc.go numbers them). It watches the wire
// (onSend, onReply: every command the transport writes, attributed to the
// lock operation it belongs to, which its owner token maps to a handle or
// an acquisition try), what the driver was told (opEnded: uncertain, not
// submitted), the servers (before/afterExec, read as an administrator)
// and, after every step, every handle's belief as the driver holds it
// (Lock.LeaseDeadline, its keep-alive's and its context's end).
type checker struct {
	violations  []Violation
	expiry      map[string]time.Duration // token -> true time its server lease ends (last seen)
	owners      []keyState               // scratch: each key's owner this step
	fenced      map[fenceKey]bool
	handouts    map[string][]handout // counter -> tokens accepted (invariant 6)
	scriptRunOf map[string]int64     // owner token -> the fenced script run that handed out its fencing token
	cleaned     map[string]string    // token -> key, once an ordered release of it answered (invariant 8)
	// per owner token: the connections that carried an acquisition the
	// driver was told is uncertain, and the renewals and releases it was
	// told are
	uncertainSet    map[string][]*connection
	uncertainWrites map[string][]toldUncertain
	// per owner token: the last id handed out when the core last
	// dispatched a release, and a renewal, of it (seen by the observer)
	releaseDispatched, renewDispatched map[string]int64
	setsOn                             map[string][]*connection // token -> connections carrying a SET of it not answered yet
	outsiders                          map[string]time.Duration // outsiders' tokens -> when they overwrote (invariants 1, 9)
	members                            memberBook               // the sorted sets' members (primcheck.go)
	markers                            []waitingWriter          // writers waiting with their marker set (primwait.go)
	fair                               fairBook                 // the fair queues (faircheck.go)
	// exempted counts writes invariant 3 let go only because the core
	// dispatched them before it was told of the uncertainty (see
	// unsealedBefore): a test finds schedules that need the exemption
	exempted struct{ releases, renewals int }
}

type fenceKey struct {
	node       int
	generation int
	clientID   int64
}

type keyState struct {
	token string
	found bool
	pttl  int64
}

func newChecker() checker {
	return checker{expiry: map[string]time.Duration{}, fenced: map[fenceKey]bool{}, scriptRunOf: map[string]int64{},
		cleaned: map[string]string{}, uncertainSet: map[string][]*connection{}, uncertainWrites: map[string][]toldUncertain{},
		releaseDispatched: map[string]int64{}, renewDispatched: map[string]int64{},
		setsOn: map[string][]*connection{}, outsiders: map[string]time.Duration{}, members: newMemberBook(), fair: newFairBook()}
}

func (k *checker) fail(w *world, invariant int, format string, args ...any) {
	v := Violation{Invariant: invariant, At: w.now, Message: fmt.Sprintf(format, args...)}
	k.violations = append(k.violations, v)
	w.trace.logf(w, nil, "", "VIOLATION %s", v)
	w.done = true
}

// isAcquisition reports whether an op may create the key.
func (op *opRun) isAcquisition() bool {
	switch op.name {
	case "acquire", "fenced-acquire", "semaphore-acquire", "read-acquire", "write-acquire",
		"fair-acquire", "fair-semaphore-acquire", "fair-read-acquire", "fair-write-acquire":
		return true
	}
	return false
}

// onSend: invariant 3 on the client side of the wire, and what invariant
// 8 needs to know about the command.
func (k *checker) onSend(w *world, r *request) {
	op := r.op
	if op == nil {
		return
	}
	name := r.cmd.Args[0]
	if op.sent > 0 && op.replied && op.confirmed {
		if op.redirected {
			w.stats.Redirects++
		} else {
			w.stats.Fallbacks++
		}
	}
	switch {
	case r.late:
		// the write the driver was told may happen (attribute.go); its
		// connection is the one the uncertainty names
	case op.uncertain:
		k.fail(w, 3, "%s op %d replayed %s after its outcome became uncertain", op.name, op.id, name)
	case op.sent > 0 && !(op.replied && op.confirmed):
		k.fail(w, 3, "%s op %d sent fallback %s without a confirming reply to the previous command", op.name, op.id, name)
	case op.isWrite() && op.name != guardName && k.unsealedBefore(op) != nil:
		// (a guarded write changes neither the key nor its lease: the
		// server's compare decides it, and invariant 14 judges it)
		c := k.unsealedBefore(op)
		k.fail(w, 3, "%s op %d sent %s on %s while an uncertain write of its token on %s may still run (not fenced)",
			op.name, op.id, name, r.conn.label(), c.label())
	case (op.isAcquisition() || op.isRenew()) && k.unsealed(k.uncertainSet[op.token]) != nil:
		k.fail(w, 3, "%s op %d sent %s on %s while the uncertain acquisition of its token on %s may still run",
			op.name, op.id, name, r.conn.label(), k.unsealed(k.uncertainSet[op.token]).label())
	}
	if next := nextOf(r.cmd); next != "" {
		k.setsOn[next] = append(k.setsOn[next], r.conn) // a hand-over sets the next owner's token
	}
	switch {
	case op.isAcquisition():
		k.setsOn[op.token] = append(k.setsOn[op.token], r.conn)
	case op.isRelease():
		r.ordered = true
		setter := op.token // a waiting marker is set by its writer's tries
		if t, ok := strings.CutPrefix(setter, conn.WaitingMarkerPrefix); ok {
			setter = t
		}
		for _, c := range k.setsOn[setter] {
			if c != r.conn && k.unsealed([]*connection{c}) != nil {
				r.ordered = false // a SET of the token may run after this delete
			}
		}
	}
}

// onReply notes what the reply proves: invariant 3 (a fallback needs the
// confirming reply), the SET that can no longer run, and an ordered
// release that answered (invariant 8 from then on).
func (k *checker) onReply(_ *world, r *request, reply conn.Reply) {
	op := r.op
	if op == nil {
		return
	}
	op.replied = true
	op.confirmed = k.confirming(r.cmd, reply)
	_, op.redirected = conn.ParseRedirect(reply.Text)
	op.redirected = op.redirected && reply.Kind == conn.ReplyError
	if next := nextOf(r.cmd); next != "" {
		k.setsOn[next] = without(k.setsOn[next], r.conn)
	}
	switch {
	case op.isAcquisition():
		k.setsOn[op.token] = without(k.setsOn[op.token], r.conn)
	case op.isRelease() && r.ordered && reply.Kind == conn.ReplyInt:
		k.cleaned[op.token] = op.key
	}
}

// without returns conns less one occurrence of c.
func without(conns []*connection, c *connection) []*connection {
	for i, x := range conns {
		if x == c {
			return append(conns[:i], conns[i+1:]...)
		}
	}
	return conns
}

// onUncertain: the driver was told that op may still run; until its
// connection is sealed, no later write of its token may go out (an
// acquisition's uncertainty forbids new acquisitions and renewals only: a
// delete behind it on its own connection is its clean-up).
func (k *checker) onUncertain(w *world, op *opRun) {
	if op.last == nil {
		return
	}
	switch {
	case op.isAcquisition():
		k.uncertainSet[op.token] = append(k.uncertainSet[op.token], op.last)
	case op.isWrite() && op.name != guardName:
		k.uncertainWrites[op.token] = append(k.uncertainWrites[op.token], toldUncertain{conn: op.last, told: w.id()})
	}
}

// onNotSubmitted: invariant 3's other half — "not submitted" is a proof,
// so the op's last written command, if any, must have been answered.
func (k *checker) onNotSubmitted(w *world, op *opRun) {
	if op.sent > 0 && !op.replied {
		k.fail(w, 3, "%s op %d ended not submitted, but its last command was written on %s and is unanswered",
			op.name, op.id, op.last.label())
	}
}

// toldUncertain is a renewal or release the driver was told is
// uncertain: the connection that carried it, and an id handed out when the
// driver was told (a dispatch that saw it or a later id came after).
type toldUncertain struct {
	conn *connection
	told int64
}

// dispatched records that the core asked the driver to send a release or
// a renewal of token; last is the last id handed out then.
func (k *checker) dispatched(token string, kind sm.EffectKind, last int64) {
	if kind == sm.EffectSendRelease {
		k.releaseDispatched[token] = last
	} else {
		k.renewDispatched[token] = last
	}
}

// unsealedBefore returns a connection that may still run an uncertain
// renewal or release of op's token, which forbids op's write. A release
// or renewal the core dispatched before the driver was told of the
// uncertainty is exempt: the core fences only the command whose outcome
// is unknown and lets the other one in flight go on (its job may still be
// opening a session on another node then) — a delete to free the key, a
// renewal whose answer it no longer reads — and compared with the token
// neither can make anyone an owner: a late renewal cannot bring a deleted
// key back, a late delete removes only this token's key.
func (k *checker) unsealedBefore(op *opRun) *connection {
	for _, u := range k.uncertainWrites[op.token] {
		if op.isRelease() && k.releaseDispatched[op.token] < u.told ||
			op.isRenew() && k.renewDispatched[op.token] < u.told {
			if k.unsealed([]*connection{u.conn}) != nil && op.isRelease() {
				k.exempted.releases++
			} else if k.unsealed([]*connection{u.conn}) != nil {
				k.exempted.renewals++
			}
			continue
		}
		if c := k.unsealed([]*connection{u.conn}); c != nil {
			return c
		}
	}
	return nil
}

// unsealed returns one of conns that may still run what it carried:
// neither fenced (its CLIENT KILL answered) nor closed on the server.
func (k *checker) unsealed(conns []*connection) *connection {
	for _, c := range conns {
		if !c.gone() && !k.fenced[fenceKey{c.node.index, c.generation, c.clientID}] {
			return c
		}
	}
	return nil
}

// confirming is the checker's own table of fallback-confirming replies
// (docs/compatibility.md, "Exact fallback triggers"), independent of conn's.
func (k *checker) confirming(cmd conn.Command, r conn.Reply) bool {
	if r.Kind != conn.ReplyError {
		return false
	}
	if _, redirect := conn.ParseRedirect(r.Text); redirect {
		return true // MOVED/ASK: the command did not run; re-sending on the target is no replay
	}
	name := strings.ToUpper(cmd.Args[0])
	low := strings.ToLower(r.Text)
	switch {
	case name == "SET" && len(cmd.Args) > 3 && strings.EqualFold(cmd.Args[3], "IFEQ"):
		return r.Text == "ERR syntax error"
	case name == "DELEX" || name == "DELIFEQ":
		n := strings.ToLower(name)
		return strings.HasPrefix(low, "err unknown command '"+n+"',") ||
			strings.HasPrefix(low, "err unknown command `"+n+"`,")
	case name == "EVALSHA":
		return strings.HasPrefix(r.Text, "NOSCRIPT")
	}
	return false
}

// beforeExec reads the key the command touches (invariants 2 and 5).
func (k *checker) beforeExec(w *world, c *connection, r *request) keyState {
	if k.fenced[fenceKey{c.node.index, c.generation, c.clientID}] {
		k.fail(w, 5, "%s ran on fenced %s after its CLIENT KILL reply", r.cmd.Args[0], c.label())
	}
	if r.op == nil || !r.op.isWrite() || r.op.memberKey() != "" {
		return keyState{}
	}
	return c.node.state(w, r.op.key)
}

// afterExec: invariant 2, and the server-side lease end of the owner.
func (k *checker) afterExec(w *world, c *connection, r *request, before keyState) {
	op := r.op
	if op == nil || !op.isWrite() || op.memberKey() != "" {
		return
	}
	c.node.refresh(w, op.key)
	after := c.node.state(w, op.key)
	if after.found && after.pttl > 0 {
		k.expiry[after.token] = w.now + time.Duration(after.pttl)*time.Millisecond
	}
	if before.found && (before.token == op.token || op.name == "write-acquire" && before.token == conn.WaitingMarker(op.token)) {
		return // its own lease, or a waiting writer's own marker
	}
	if strings.HasPrefix(op.name, "fair-") && k.fairMayChange(op, before) {
		return // a fair queue's grant of a free key, or the claim of its own grant
	}
	if op.isAcquisition() && !before.found {
		return
	}
	if op.name == handOverName && !before.found && after.token == nextOf(r.cmd) {
		return // the next owner's SET NX part: the key was free
	}
	if after != before {
		k.fail(w, 2, "%s op %d (%s) changed %s although its token is not the owner (owner before: %s)",
			op.name, op.id, r.cmd.Args[0], op.key, w.ownerName(before))
	}
}

func (k *checker) onFenced(_ *world, c *connection) {
	k.fenced[fenceKey{c.node.index, c.generation, c.clientID}] = true
}

// ownerName names the owner of a key state, for messages.
func (w *world) ownerName(s keyState) string {
	if !s.found {
		return "none"
	}
	return tokenName(s.token)
}
