package conn

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ReplicaAckWait is the WAIT timeout of a Sentinel engine's renewal batch
// (rule SentinelRenewalsNeedReplicaAcks): a healthy replica acknowledges
// within a round trip, so WAIT blocks this long only when the primary has
// fewer replicas than it had, and the batch's renewals are then not
// confirmations.
const ReplicaAckWait = 100 * time.Millisecond

// ErrNotReplicated is the cause (Uncertain) of a renewal that a node named
// as the primary answered OK while fewer of its replicas acknowledged it
// than the node has had since the engine first met it as the primary: its
// replica may have been promoted (Sentinel runs REPLICAOF NO ONE before it
// announces the switch), and then the new primary never saw the renewal.
//
// An acquisition so answered is not an error: its Result says Unconfirmed
// (the key is there, on that node), and the caller ends it and does not
// hand it out (rule SentinelAcquisitionsNeedReplicaAcks).
var ErrNotReplicated = errors.New("fewer replicas acknowledged the write than the primary has had: a replica may have been promoted")

// ReplicaCheckRefusedError is why a Sentinel client's write confirms
// nothing when the server refused a command of the replica check (ROLE or
// WAIT after the write, INFO replication when the session opened): NOPERM,
// an ACL without the Sentinel line's +role, +wait or +info. Nothing tells
// the client which replicas have the write, so it is no confirmation. It
// matches ErrNotReplicated (errors.Is), and Unwrap gives the server's
// reply (the client's own error type where it has one, else *ServerError).
type ReplicaCheckRefusedError struct {
	Command string // "ROLE", "WAIT" or "INFO replication"
	Reply   error  // the server's error reply
}

// Error names the refused command and the server's reply.
func (e *ReplicaCheckRefusedError) Error() string {
	return fmt.Sprintf("the server refused %s (%v), without which a Sentinel client cannot learn that the replicas acknowledged a write (the user needs the Sentinel ACL line: lockctl acl --sentinel)", e.Command, e.Reply)
}

// Is matches ErrNotReplicated.
func (e *ReplicaCheckRefusedError) Is(target error) bool { return target == ErrNotReplicated }

// Unwrap returns the server's reply.
func (e *ReplicaCheckRefusedError) Unwrap() error { return e.Reply }

// replicaState is a Sentinel engine's replicas per node: every online
// replica (by its announced address) that node listed while the engine
// took it as the primary (INFO replication when a session opens, ROLE with
// each renewal batch). Addresses,
// not counts: a replica that reconnects is listed twice for a moment. A
// renewal there is a confirmation only once that many replicas
// acknowledged it (WAIT). A switch to a node starts its set afresh.
type replicaState struct {
	mu   sync.Mutex
	seen map[string]map[string]bool // node → replica addresses
}

// replicasExpected returns how many replicas must acknowledge a write on
// node for it to be confirmed (0: node has had none).
func (e *Engine) replicasExpected(node string) int {
	e.repl.mu.Lock()
	defer e.repl.mu.Unlock()
	return len(e.repl.seen[node])
}

// noteReplicas records the replicas node listed.
func (e *Engine) noteReplicas(node string, replicas []string) {
	if len(replicas) == 0 {
		return
	}
	e.repl.mu.Lock()
	defer e.repl.mu.Unlock()
	if e.repl.seen == nil {
		e.repl.seen = map[string]map[string]bool{}
	}
	set := e.repl.seen[node]
	if set == nil {
		set = map[string]bool{}
		e.repl.seen[node] = set
	}
	for _, r := range replicas {
		set[r] = true
	}
}

// forgetReplicas starts node's count afresh: the client names it as the
// new primary, which has the replicas Sentinel gives it from now on.
func (e *Engine) forgetReplicas(node string) {
	e.repl.mu.Lock()
	defer e.repl.mu.Unlock()
	delete(e.repl.seen, node)
}

// roleReplicas reads ROLE's reply: the addresses (ip:port) of the replicas
// a primary lists (none for a reply that is not a primary's ROLE).
func roleReplicas(r Reply) []string {
	if r.Kind != ReplyArray || len(r.Array) < 3 || r.Array[0].Text != "master" || r.Array[2].Kind != ReplyArray {
		return nil
	}
	var out []string
	for _, rep := range r.Array[2].Array {
		if rep.Kind == ReplyArray && len(rep.Array) >= 2 {
			port := rep.Array[1].Text
			if rep.Array[1].Kind == ReplyInt {
				port = strconv.FormatInt(rep.Array[1].Int, 10)
			}
			out = append(out, rep.Array[0].Text+":"+port)
		}
	}
	return out
}

// infoReplicas reads INFO replication's reply: the addresses of a
// primary's online replicas (slaveN:ip=…,port=…,state=online; none for a
// reply that is not a primary's). A replica still syncing acknowledges
// nothing until it is online (a full sync may wait seconds to start):
// waiting for it would leave a fresh Locks unable to renew meanwhile.
func infoReplicas(r Reply) []string {
	if r.Kind != ReplyBulk && r.Kind != ReplyStatus || !strings.Contains(r.Text, "role:master") {
		return nil
	}
	var out []string
	for _, line := range strings.Split(r.Text, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "slave") || !strings.Contains(fields, "state=online") {
			continue
		}
		var ip, port string
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "ip="); ok {
				ip = v
			} else if v, ok := strings.CutPrefix(f, "port="); ok {
				port = v
			}
		}
		out = append(out, ip+":"+port)
	}
	return out
}

// replicaCheck is a Sentinel renewal batch's confirmation: ROLE (which
// raises the node's count) and, when the node has had replicas, WAIT for
// that many, after the batch's renewals on the session's connection.
type replicaCheck struct {
	on     bool
	wanted int
	// blind: the session never learned its node's replicas before its
	// first write (INFO replication refused: the refusal, else nil):
	// nothing confirms, as after a refused ROLE. A replica promoted between
	// that write and the ROLE behind it is no longer listed, so a count
	// learned after the write could wait for none.
	blind error
}

// replicaCheckFor returns s's check (off outside Sentinel mode).
func (s *session) replicaCheckFor() replicaCheck {
	if s.e.mode != ModeSentinel {
		return replicaCheck{}
	}
	return replicaCheck{on: true, wanted: s.e.replicasExpected(s.node), blind: s.infoRefused}
}

// commands returns the commands that follow the renewals in the pipeline.
func (c replicaCheck) commands() []Command {
	if !c.on {
		return nil
	}
	cmds := []Command{RoleCommand()}
	if c.wanted > 0 {
		cmds = append(cmds, WaitCommand(int64(c.wanted), ReplicaAckWait.Milliseconds()))
	}
	return cmds
}

// confirmed reads the trailing replies (ROLE, then WAIT when sent): it
// records ROLE's replicas and returns nil when WAIT counted enough of
// them, else why not (ErrNotReplicated, or a *ReplicaCheckRefusedError).
// Without a WAIT (the node had no replica known), a ROLE that lists one
// makes the batch unconfirmed: the retry waits for it. A ROLE or WAIT
// refused (an error reply: NOPERM where the ACL lacks +role or +wait)
// confirms nothing either: the check is never silently off, and the locks
// end at their lease. Nor does any batch of a session that could not read
// INFO replication when it opened (blind).
func (c replicaCheck) confirmed(s *session, replies []Reply) error {
	if !c.on {
		return nil
	}
	if c.blind != nil {
		return &ReplicaCheckRefusedError{Command: "INFO replication", Reply: c.blind}
	}
	if replies[0].Kind == ReplyError {
		return &ReplicaCheckRefusedError{Command: "ROLE", Reply: replyErr(replies[0])}
	}
	online := roleReplicas(replies[0])
	s.e.noteReplicas(s.node, online)
	if c.wanted == 0 {
		if len(online) == 0 {
			return nil
		}
		return ErrNotReplicated
	}
	if replies[1].Kind == ReplyError {
		return &ReplicaCheckRefusedError{Command: "WAIT", Reply: replyErr(replies[1])}
	}
	if acked, err := waitCount(replies[1], replies[1].Err); err != nil || acked < int64(c.wanted) {
		return ErrNotReplicated
	}
	return nil
}

// confirmAfter sends the check on its own after writes s already carried
// (a renewal sent alone, or a batch's fallbacks: a batch's WAIT counted
// writes before theirs) and returns nil when enough replicas acknowledged
// them (WAIT counts up to the connection's last write), else why not.
func (c replicaCheck) confirmAfter(ctx context.Context, s *session) error {
	if !c.on {
		return nil
	}
	if c.blind != nil {
		return c.confirmed(s, nil) // nothing to learn: send nothing
	}
	cmds := c.commands()
	replies := make([]Reply, len(cmds))
	if err := s.link.exchange(ctx, "extend", cmds, replies, nil, s); err != nil {
		return ErrNotReplicated
	}
	return c.confirmed(s, replies)
}

// confirmRenewal checks a renewal op sent alone on s that the node
// answered OK (rule SentinelRenewalsNeedReplicaAcks): outside Sentinel
// mode, or for another op, it returns nil; otherwise nil once enough
// replicas acknowledged it, or an Uncertain *Error (ErrNotReplicated).
func (s *session) confirmRenewal(ctx context.Context, op Op, res Result) error {
	if s.e.mode != ModeSentinel || !res.Owned || !op.confirmsLease() {
		return nil
	}
	why := s.replicaCheckFor().confirmAfter(ctx, s)
	if why == nil {
		return nil
	}
	return &Error{Class: Uncertain, Op: "extend", Addr: s.node, Session: s, Err: why}
}

// confirmAcquisition checks an acquisition op sent on s that the node
// answered Owned (rule SentinelAcquisitionsNeedReplicaAcks): on a Sentinel
// client, ROLE and WAIT follow it on the same connection, one round trip,
// and res comes back Unconfirmed when fewer replicas acknowledged it than
// the node has had (or the pair got no answer); when its ROLE listed a
// replica the count lacked, the pair is sent once more with the new count.
// Outside Sentinel mode,
// for another op or a refusal, res is returned unchanged and nothing is
// sent.
func (s *session) confirmAcquisition(ctx context.Context, op Op, res Result) Result {
	if s.e.mode != ModeSentinel || !res.Owned || !op.acquires() {
		return res
	}
	check := s.replicaCheckFor()
	why := check.confirmAfter(ctx, s)
	if again := s.replicaCheckFor(); why != nil && again.wanted > check.wanted {
		// ROLE listed a replica the count lacked (one came online since):
		// WAIT for it too, once; the acquisition is the connection's write.
		why = again.confirmAfter(ctx, s)
	}
	res.Unconfirmed = why
	return res
}

// acquires reports an op that takes a lock, a permit or a hold: SET NX
// PX, the fenced script, a semaphore's or read/write lock's acquisition, a
// fair queue's try.
func (o Op) acquires() bool {
	switch o.kind {
	case opAcquire, opFenced:
		return true
	case opPrimitive:
		k := o.prim.kind
		return k == primAcquire || k == primWriteAcquire || k == primFairTry || k == primHandOver
	}
	return false
}

// confirmsLease reports a renewal of a holder's lease (a fair waiter's
// renewal keeps its place in the queue, which owns nothing).
func (o Op) confirmsLease() bool {
	return o.Batchable() && !(o.kind == opPrimitive && o.prim.kind == primFairRenew)
}

// notReplicated turns each confirmed renewal of a lease in results into an
// Uncertain outcome whose cause, why, matches ErrNotReplicated.
func notReplicated(s *session, requests []ExtendRequest, results []ExtendResult, why error) {
	for i, r := range results {
		if r.Err == nil && r.Owned && requests[i].Op.confirmsLease() {
			results[i].Err = &Error{Class: Uncertain, Op: "extend", Addr: s.node, Session: s, Err: why}
		}
	}
}
