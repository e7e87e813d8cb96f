package conn_test

import (
	"context"
	"errors"
	. "github.com/respire-go/respire/conn"
	"testing"

	"github.com/respire-go/respire/sim"
)

// The acquisition's SET NX rides the node's session, the socket that also
// carries the lock's release: one pipeline per node batches both.
func TestAcquireRidesTheSessionThatCarriesTheRelease(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	acquired, err := p.Acquire(ctxT(t), "k", "tok", 60000)
	if err != nil || !acquired.Owned || acquired.Session == nil {
		t.Fatalf("Acquire = %+v, %v; want acquired on a session", acquired, err)
	}
	released := mustRelease(t, p, "k", "tok")
	if released.Session != acquired.Session {
		t.Fatal("the release went on another session than the acquisition")
	}
	id, _ := Pin(acquired.Session).Identity()
	for _, e := range srv.Log() {
		if (e.Args[0] == "SET" || e.Args[0] == "DELEX") && e.ClientID != id.ID {
			t.Fatalf("%s came from client %d; the session is %d", e.Args[0], e.ClientID, id.ID)
		}
	}
	again, err := p.Acquire(ctxT(t), "k", "tok2", 60000)
	if err != nil || !again.Owned {
		t.Fatalf("second Acquire = %+v, %v", again, err)
	}
	if taken, err := p.Acquire(ctxT(t), "k", "tok3", 60000); err != nil || taken.Owned {
		t.Fatalf("Acquire of a held key = %+v, %v; want not acquired", taken, err)
	}
}

// A caller whose ctx ends while its command waits for a reply gets an
// uncertain outcome, but its cancellation is not a transport failure: the
// session stays in use for everyone else (retiring it would close a socket
// that other locks' renewals and releases are riding).
func TestACallersCancellationDoesNotRetireTheSession(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	first, err := p.Acquire(ctxT(t), "warm", "tok", 60000)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "SET", Gate: gate})
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := p.Acquire(ctx, "k", "tok", 60000)
		done <- err
	}()
	if _, err := srv.WaitFor(ctxT(t), func(e sim.Entry) bool { return e.Args[0] == "SET" && e.Args[1] == "k" }); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v; want an unknown outcome caused by the cancellation", err)
	}
	if Pin(first.Session).Retired() {
		t.Fatal("the caller's cancellation retired the shared session")
	}
	close(gate)
	res := mustRelease(t, p, "k", "tok")
	if res.Session != first.Session {
		t.Fatal("the next command opened a new session")
	}
}

// An acquisition routed to a node that no longer owns the slot is answered
// MOVED (it did not run there) and is sent again on the new owner's session.
func TestAcquireFollowsMovedToTheNewOwnersSession(t *testing.T) {
	c := startCluster(t, sim.Redis84, sim.Redis84)
	p := newPool(t, newClient(t, c.Addrs(), "", simPassword))
	key := keyOnNode(t, c, 0)
	if res, err := p.Acquire(ctxT(t), key, "tok", 60000); err != nil || !res.Owned {
		t.Fatalf("Acquire = %+v, %v", res, err)
	}
	mustRelease(t, p, key, "tok")
	c.MoveSlot(sim.Slot(key), 1)
	res, err := p.Acquire(ctxT(t), key, "tok2", 60000)
	if err != nil || !res.Owned || Pin(res.Session).Node() != c.Addrs()[1] {
		t.Fatalf("Acquire after the move = %+v, %v; want acquired on node 1", res, err)
	}
	if got := c.Node(1).Exec("GET", key); got != "$4\r\ntok2\r\n" {
		t.Fatalf("new owner has %q", got)
	}
}
