package leasetest

import (
	"strconv"
	"strings"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// The faults run on the node's administrator connection (sim.Server.Exec):
// at once, also while the server is paused, and never logged, faulted or
// refused by an ACL. A change made there is a change by no client, so every
// tracking connection that read the key is told of it, NOLOOP or not.

// Steal puts another owner's token in key, keeping its TTL, as a client
// that took the key after a lost race (or a buggy one writing over it)
// would: SET key <fresh token> XX KEEPTTL. It reports whether the key
// existed; when it did not, nothing changed.
//
// A holder of the key learns it as of another owner's write: with a
// keep-alive and push, within milliseconds, Lock.Context ending with a
// *lease.LossError whose Reason is lease.LossReadRefused; without push, at
// its next renewal (lease.LossRefused, about half a lease later with a
// keep-alive) or its release (lease.NotOwned). A waiter woken by the change
// finds the key still held and waits on. key is a wire key (with the Locks
// view's prefix).
func (s *Server) Steal(key string) bool {
	thief := string(lease.NewToken().Bytes())
	return s.srv.Exec("SET", key, thief, "XX", "KEEPTTL") == "+OK\r\n"
}

// Delete deletes key, as a third party's DEL (an operator, a script
// cleaning up, another library on the same key) would. It reports whether
// the key existed; when it did not, nothing changed.
//
// A holder learns it as it learns of a Steal (lease.LossReadRefused with a
// keep-alive and push, within milliseconds; lease.LossRefused at the next
// renewal without). A waiter parked on the key is woken at once with push
// and takes the lock with its next SET NX; without push, at its next poll
// (lease.WithRetryEvery). key is a wire key (with the Locks view's prefix).
func (s *Server) Delete(key string) bool {
	return s.srv.Exec("DEL", key) == ":1\r\n"
}

// Expire makes key's lease run out now, as its TTL reaching zero on the
// server would, here earlier than the holder's own estimate (as a server
// clock running fast would make it happen): the key is deleted and every
// tracking client that read it is sent the invalidation an expiry sends
// (PEXPIRE key 0). It reports whether the key existed; when it did not,
// nothing changed.
//
// A holder and waiters observe it as a Delete: a keep-alive holder with
// push within milliseconds (lease.LossReadRefused), without push at its
// next renewal (lease.LossRefused); a waiter is woken. key is a wire key
// (with the Locks view's prefix).
func (s *Server) Expire(key string) bool {
	return s.srv.Exec("PEXPIRE", key, "0") == ":1\r\n"
}

// Pause stalls the server, as a long command, a fork under memory
// pressure or a frozen VM would: from now on the commands every connection
// sends are read and wait, neither run nor answered, until Resume (replies
// produced before are written). It returns at once and is idempotent.
// Steal, Delete, Expire and the sim.Server's Exec still act while paused,
// keys keep expiring on the server's clock, and the invalidations these
// send to tracking connections are still written.
//
// A holder's renewal sent during the pause waits for its reply. If the
// pause outlasts the lease, the holder gives the lock up at the lease's end
// minus the drift margin (lease.WithDriftMargin), by its own clock and
// whatever the server does: Lock.Context ends with a *lease.LossError,
// Reason lease.LossDeadlineInFlight (lease.LossDeadline if no renewal was
// in flight), and the connection is fenced once the server answers again.
// An acquisition waits for its reply (its ctx can end the wait; see
// lease.Locks.TryAcquire). A pause shorter than the lease's remaining time
// is survived: the replies come late, but in time.
func (s *Server) Pause() { s.srv.Pause() }

// Resume ends a Pause: the waiting commands run, in the order each
// connection sent them, and are answered. It returns at once (the replies
// are written in the background) and is idempotent; Close calls it.
func (s *Server) Resume() { s.srv.Resume() }

// DropConnections closes every client connection open now, on the
// server's side, as a network blip or a proxy restart would (CLIENT KILL of
// each); the server keeps its keys and scripts. It returns how many it
// closed, once their sockets are closed; clients see the end on their next
// read or write.
//
// A healthy keep-alive lock survives it: the library reconnects, a renewal
// cut off by the drop is fenced and confirmed again on a fresh connection,
// and the key is tracked again for push; Lock.Context does not end. A
// command whose reply the drop lost (a ResetExpiry or Release in flight)
// has an unknown outcome: see lease.ErrOutcomeUnknown.
func (s *Server) DropConnections() int {
	reply := s.srv.Exec("CLIENT", "KILL", "SKIPME", "no")
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(reply, ":"), "\r\n"))
	return n
}

// Failover replaces the node by a new primary behind the same address, as
// a promoted replica that had every write would be (Sentinel, a managed
// service's failover): every connection is closed, the new primary knows no
// scripts (EVALSHA answers NOSCRIPT until EVAL) and tracks no keys, and it
// runs profile to (another server version, for an upgrade or a downgrade;
// "" keeps the current one). It keeps every key with its value and TTL, the
// ACL users and the password. It fails only for an unknown profile, and
// then changes nothing.
//
// A healthy keep-alive lock survives it, as it survives DropConnections:
// its next renewal confirms the lease on a fresh connection, with the
// commands the new server version offers (learned again per connection),
// and Lock.Context does not end. A failover that loses writes (a lagging
// replica promoted) is Failover followed by Delete of the keys the replica
// never had.
func (s *Server) Failover(to sim.Profile) error {
	if to == "" {
		to = s.srv.Profile()
	}
	return s.srv.Failover(to)
}
