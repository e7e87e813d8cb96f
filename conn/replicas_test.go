package conn

import (
	"errors"
	"strings"
	"testing"
)

// TestSentinelRenewalsNeedReplicaAcks_AReplicaListedTwiceCountsOnce: a
// replica that reconnects (a failed partial resync, then a full one) is
// listed twice by its primary for a moment; the engine counts replicas by
// address, so WAIT never asks for more acknowledgements than there are
// replicas (which would leave every renewal unconfirmed). Only online
// replicas count (a syncing one acknowledges nothing yet); ROLE's are read
// the same way; a replica's own reply names none.
func TestSentinelRenewalsNeedReplicaAcks_AReplicaListedTwiceCountsOnce(t *testing.T) {
	e := &Engine{}
	info := Reply{Kind: ReplyBulk, Text: "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n" +
		"slave0:ip=127.0.0.1,port=6380,state=online,offset=0,lag=0\r\n" +
		"slave2:ip=127.0.0.1,port=6382,state=wait_bgsave,offset=0,lag=0\r\n" +
		"slave1:ip=127.0.0.1,port=6380,state=online,offset=120,lag=0\r\nmaster_repl_offset:120\r\n"}
	e.noteReplicas("p:1", infoReplicas(info))
	if got := e.replicasExpected("p:1"); got != 1 {
		t.Fatalf("a replica listed twice counts %d; want 1", got)
	}
	role := Reply{Kind: ReplyArray, Array: []Reply{{Kind: ReplyBulk, Text: "master"}, {Kind: ReplyInt, Int: 120},
		{Kind: ReplyArray, Array: []Reply{
			{Kind: ReplyArray, Array: []Reply{{Kind: ReplyBulk, Text: "127.0.0.1"}, {Kind: ReplyBulk, Text: "6380"}, {Kind: ReplyBulk, Text: "120"}}},
			{Kind: ReplyArray, Array: []Reply{{Kind: ReplyBulk, Text: "127.0.0.1"}, {Kind: ReplyBulk, Text: "6381"}, {Kind: ReplyBulk, Text: "120"}}},
		}}}}
	e.noteReplicas("p:1", roleReplicas(role))
	if got := e.replicasExpected("p:1"); got != 2 {
		t.Fatalf("after ROLE listed a second replica: %d; want 2", got)
	}
	replica := Reply{Kind: ReplyBulk, Text: "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\n"}
	if got := infoReplicas(replica); got != nil {
		t.Fatalf("a replica's INFO names replicas %v", got)
	}
	e.forgetReplicas("p:1")
	if got := e.replicasExpected("p:1"); got != 0 {
		t.Fatalf("after a switch to the node: %d; want 0", got)
	}
}

// TestSentinelRenewalsNeedReplicaAcks_ARefusedRoleConfirmsNothing: a ROLE
// (or WAIT) the server refuses (NOPERM: an ACL without +role or +wait)
// leaves the check on, not off: the batch is not a confirmation, whatever
// WAIT would say, and its error says the server refused that command: it
// matches ErrNotReplicated, and the server's reply is in its chain.
func TestSentinelRenewalsNeedReplicaAcks_ARefusedRoleConfirmsNothing(t *testing.T) {
	s := &session{e: &Engine{}, node: "p:1"}
	check := replicaCheck{on: true}
	noperm := Reply{Kind: ReplyError, Text: "NOPERM User lock has no permissions to run the 'role' command"}
	why := check.confirmed(s, []Reply{noperm})
	if why == nil {
		t.Fatal("a renewal batch whose ROLE was refused counted as confirmed")
	}
	wantRefused(t, why, "ROLE")
	noReplicas := Reply{Kind: ReplyArray, Array: []Reply{{Kind: ReplyBulk, Text: "master"}, {Kind: ReplyInt, Int: 1},
		{Kind: ReplyArray}}}
	if why := check.confirmed(s, []Reply{noReplicas}); why != nil {
		t.Fatalf("a primary with no replica ever seen: the batch must confirm (%v)", why)
	}
	waitRefused := Reply{Kind: ReplyError, Text: "NOPERM User lock has no permissions to run the 'wait' command"}
	why = replicaCheck{on: true, wanted: 1}.confirmed(s, []Reply{noReplicas, waitRefused})
	if why == nil {
		t.Fatal("a renewal batch whose WAIT was refused counted as confirmed")
	}
	wantRefused(t, why, "WAIT")
}

// wantRefused checks the error of a write whose replica check the server
// refused (command): it matches ErrNotReplicated, names the command and the
// server's NOPERM reply (*ServerError in its chain), and does not claim
// that too few replicas acknowledged the write.
func wantRefused(t *testing.T, why error, command string) {
	t.Helper()
	err := error(&Error{Class: Uncertain, Op: "extend", Addr: "p:1", Err: why})
	var refused *ReplicaCheckRefusedError
	var reply *ServerError
	if !errors.Is(err, ErrNotReplicated) || !errors.As(err, &refused) || refused.Command != command ||
		!errors.As(err, &reply) || reply.Code != "NOPERM" {
		t.Fatalf("the error of a refused %s = %v; want ErrNotReplicated, a *ReplicaCheckRefusedError for it and the server's NOPERM reply", command, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "refused "+command) || !strings.Contains(msg, "NOPERM") ||
		strings.Contains(msg, ErrNotReplicated.Error()) {
		t.Fatalf("the error of a refused %s reads %q: it must name the refusal, not too few acknowledgements", command, msg)
	}
}

// TestSentinelRenewalsNeedReplicaAcks_ARefusedInfoConfirmsNothing: a
// session whose INFO replication was refused when it opened (NOPERM: an
// ACL without +info) never learned the replicas its first write needed: a
// replica promoted between that write and the ROLE behind it is no longer
// listed, so a count learned from ROLE could wait for none. Nothing it
// writes confirms, whatever ROLE and WAIT say.
func TestSentinelRenewalsNeedReplicaAcks_ARefusedInfoConfirmsNothing(t *testing.T) {
	refused := &ServerError{Code: "NOPERM", Message: "NOPERM User lock has no permissions to run the 'info' command"}
	s := &session{e: &Engine{mode: ModeSentinel}, node: "p:1", infoRefused: refused}
	check := s.replicaCheckFor()
	noReplicas := Reply{Kind: ReplyArray, Array: []Reply{{Kind: ReplyBulk, Text: "master"}, {Kind: ReplyInt, Int: 1},
		{Kind: ReplyArray}}}
	why := check.confirmed(s, []Reply{noReplicas})
	if why == nil {
		t.Fatal("a session that could not read INFO replication confirmed a write")
	}
	wantRefused(t, why, "INFO replication")
	s.infoRefused = nil
	if why := s.replicaCheckFor().confirmed(s, []Reply{noReplicas}); why != nil {
		t.Fatalf("a primary with no replica ever seen, its INFO read: the batch must confirm (%v)", why)
	}
}
