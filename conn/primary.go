package conn

import (
	"errors"
	"fmt"
)

// ErrNotPrimary is the cause when a reply came from a session whose node is
// no longer the primary (a Sentinel switched the master under it): the
// command ran, if at all, on a server whose data the new primary does not
// have, so the reply proves nothing about the lock. It is Uncertain; the
// session is retired, and fencing it is immediate (nothing it still carries
// can affect the primary's data).
var ErrNotPrimary = errors.New("the session's node is no longer the primary")

// ErrAmbiguousPrimary: a Sentinel client that lists more than one node
// (SendToReplicas) or a replica (ReplicaOnly): the lock needs the primary,
// and the client does not say which node that is.
var ErrAmbiguousPrimary = errors.New("the client does not name one primary (Sentinel SendToReplicas or ReplicaOnly are not supported for locks)")

// primary returns the address of the node that takes writes for every key
// outside cluster mode: the one node of a standalone client, the current
// master of a Sentinel client (rueidis switches it when Sentinel announces a
// failover).
func (p *Pool) primary() (string, error) {
	nodes := p.client.Nodes()
	if len(nodes) != 1 {
		return "", fmt.Errorf("%w: %d nodes", ErrAmbiguousPrimary, len(nodes))
	}
	for node := range nodes {
		return node, nil
	}
	return "", ErrAmbiguousPrimary
}

// IsPrimary reports whether node is, as far as the client knows now, the
// primary its session's commands must reach. Only a Sentinel client's
// primary can change without a MOVED; for the other modes it is true.
func (p *Pool) IsPrimary(node string) bool {
	if !p.sentinel {
		return true
	}
	primary, err := p.primary()
	return err == nil && primary == node
}

// checkPrimary is called after every reply on a Sentinel client's session:
// a reply from a node that stopped being the primary proves nothing, since
// the new primary does not see that node's later writes. It retires and
// demotes such a session and returns an Uncertain *Error.
func (s *pinned) checkPrimary(op string) error {
	if !s.pool.sentinel || s.pool.IsPrimary(s.node) {
		return nil
	}
	s.demoted.Store(true)
	s.pool.retireFor(s, RetiredDemoted)
	return &Error{Class: Uncertain, Op: op, Addr: s.node, Session: s, Err: ErrNotPrimary}
}

// Demoted reports whether the session's node stopped being the primary
// while the session lived. It does not block.
func (s *pinned) Demoted() bool { return s.demoted.Load() }
