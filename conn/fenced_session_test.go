package conn_test

import (
	"errors"
	. "github.com/respire-go/respire/conn"
	"strings"
	"testing"

	"github.com/respire-go/respire/sim"
)

// A FencedAcquireOp runs on the lease key's session like the other lock
// operations: EVALSHA, EVAL after NOSCRIPT, the token in the Result, the
// session that carried it recorded in the Route; a contended try is not
// owned and leaves the counter alone.
func TestFencedAcquireOpRunsOnTheKeysSession(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	route := &Route{}
	res, err := p.Do(ctxT(t), FencedAcquireOp("{j}:lease", "{j}:fence", "tok-1", 60000), route)
	if err != nil || !res.Owned || res.FencingToken != 1 || res.Session == nil || route.Session() != res.Session {
		t.Fatalf("Do(fenced) = %+v, %v; want owned, token 1, on the routed session", res, err)
	}
	if got := lockCommands(srv.Log(), 0); strings.Join(got, " ") != "EVALSHA EVAL" {
		t.Fatalf("commands = %v; want EVALSHA then EVAL (NOSCRIPT)", got)
	}
	session, err := p.SessionForKey(ctxT(t), "{j}:lease")
	if err != nil || session != res.Session {
		t.Fatalf("the key's session = %v, %v; want the one that ran the script", session, err)
	}
	res, err = session.Do(ctxT(t), FencedAcquireOp("{j}:lease", "{j}:fence", "tok-2", 60000), nil)
	if err != nil || res.Owned || res.FencingToken != 0 {
		t.Fatalf("contended Do(fenced) = %+v, %v; want not owned", res, err)
	}
	if got := srv.Exec("GET", "{j}:fence"); got != "$1\r\n1\r\n" {
		t.Fatalf("counter = %q; want 1", got)
	}
	mustRelease(t, p, "{j}:lease", "tok-1")
	res, err = session.Do(ctxT(t), FencedAcquireOp("{j}:lease", "{j}:fence", "tok-3", 60000), nil)
	if err != nil || !res.Owned || res.FencingToken != 2 {
		t.Fatalf("Do(fenced) after the release = %+v, %v; want token 2", res, err)
	}
}

// A malformed reply is a Definite protocol error: the script ran.
func TestFencedAcquireOpMalformedReplyIsAProtocolError(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	srv.Inject(sim.Fault{Kind: sim.ReplaceReply, Command: "EVALSHA", Reply: "$1\r\n0\r\n"})
	srv.Exec("SCRIPT", "LOAD", FencedAcquireScript)
	_, err := p.Do(ctxT(t), FencedAcquireOp("{j}:lease", "{j}:fence", "tok", 60000), nil)
	var e *Error
	if !errors.As(err, &e) || e.Class != Definite || e.Code != "PROTOCOL" || !errors.Is(err, ErrMalformedFencingToken) {
		t.Fatalf("Do(fenced) with reply \"0\" = %v; want a definite protocol error", err)
	}
	if got := srv.Exec("EXISTS", "{j}:lease"); got != ":1\r\n" {
		t.Fatalf("lease EXISTS = %q; want :1 (the script ran)", got)
	}
}

// In cluster mode a cross-slot pair is refused before anything is sent,
// by the Pool and by a Session alike.
func TestFencedAcquireOpRefusesACrossSlotPairBeforeSending(t *testing.T) {
	cluster := startCluster(t, sim.Redis70, sim.Valkey90)
	p := newPool(t, newClient(t, cluster.Addrs(), "", simPassword))
	if err := p.CheckFencedKeys("a:lease", "a:fence"); !errors.Is(err, ErrCrossSlot) || !errors.Is(err, ErrNotSubmitted) {
		t.Fatalf("CheckFencedKeys(cross-slot) = %v; want ErrCrossSlot, not submitted", err)
	}
	if err := p.CheckFencedKeys("{a}:lease", "{a}:fence"); err != nil {
		t.Fatalf("CheckFencedKeys(hash-tagged) = %v", err)
	}
	if _, err := p.Do(ctxT(t), FencedAcquireOp("a:lease", "a:fence", "tok", 60000), nil); !errors.Is(err, ErrCrossSlot) {
		t.Fatalf("Do(cross-slot) = %v; want ErrCrossSlot", err)
	}
	session, err := p.SessionForKey(ctxT(t), "a:lease")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := session.Do(ctxT(t), FencedAcquireOp("a:lease", "a:fence", "tok", 60000), nil); !errors.Is(err, ErrCrossSlot) {
		t.Fatalf("Session.Do(cross-slot) = %v; want ErrCrossSlot", err)
	}
	for i := range 2 {
		if got := lockCommands(cluster.Node(i).Log(), 0); len(got) != 0 {
			t.Fatalf("node %d received %v", i, got)
		}
	}
}
