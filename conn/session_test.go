package conn_test

import (
	"errors"
	. "github.com/respire-go/respire/conn"
	"slices"
	"testing"

	"github.com/respire-go/respire/capstore"
	"github.com/respire-go/respire/sim"
)

func TestSessionLearnsIdentityOnce(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	mustSet(t, srv, "k", "tok")
	res := mustRelease(t, p, "k", "tok")
	id, ok := Pin(res.Session).Identity()
	if !ok || id.ID == 0 || id.Addr == "" {
		t.Fatalf("Identity() = %+v, %v; want id and addr", id, ok)
	}
	for _, e := range srv.Log() {
		if e.Args[0] == "DELEX" && e.ClientID != id.ID {
			t.Fatalf("DELEX came from client %d; session identity says %d", e.ClientID, id.ID)
		}
	}
	mustSet(t, srv, "k", "tok")
	mustRelease(t, p, "k", "tok")
	count := 0
	for _, e := range srv.Log() {
		if len(e.Args) > 1 && e.Args[0] == "CLIENT" && e.Args[1] == "ID" {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("CLIENT ID sent %d times; want once per session", count)
	}
}

func TestSessionWithoutClientPermissionHasNoIdentityAndStillWorks(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	srv.SetUser("locker", "lockerpw", "set", "get", "delex")
	p := newPool(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw"))
	mustSet(t, srv, "k", "tok")
	res := mustRelease(t, p, "k", "tok")
	if _, ok := Pin(res.Session).Identity(); ok {
		t.Fatal("Identity() ok without CLIENT permission")
	}
	var redisErr *ServerError
	if !errors.As(Pin(res.Session).IdentityError(), &redisErr) {
		t.Fatalf("IdentityError() = %v; want the NOPERM reply", Pin(res.Session).IdentityError())
	}
	if err := p.Fence(ctxT(t), res.Session); !errors.Is(err, ErrNoIdentity) || !errors.Is(err, ErrNotSubmitted) {
		t.Fatalf("Fence without identity = %v; want ErrNoIdentity, not submitted", err)
	}
	if err := Pin(res.Session).ProbeKill(ctxT(t)); !errors.Is(err, ErrNoIdentity) {
		t.Fatalf("ProbeKill without identity = %v; want ErrNoIdentity", err)
	}
}

func TestSecondSessionToSameNodeDiscoversAgain(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	ctx := ctxT(t)
	first, err := p.SessionForT(ctx, nodeOf(t, p))
	if err != nil {
		t.Fatal(err)
	}
	second, err := p.OpenSessionT(ctx, first.Node())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	for _, s := range []*Pinned{first, first, second, second} {
		mustSet(t, srv, "k", "tok")
		if res, err := s.Release(ctx, "k", "tok"); err != nil || !res.Owned {
			t.Fatalf("Release = %+v, %v", res, err)
		}
	}
	id1, _ := first.Identity()
	id2, _ := second.Identity()
	if id1.ID == id2.ID {
		t.Fatal("second session shares the first one's socket")
	}
	for _, c := range []struct {
		id   int64
		want []string
	}{{id1.ID, []string{"DELEX", "DELIFEQ", "DELIFEQ"}}, {id2.ID, []string{"DELEX", "DELIFEQ", "DELIFEQ"}}} {
		if got := lockCommands(srv.Log(), c.id); !slices.Equal(got, c.want) {
			t.Fatalf("client %d sent %v; want %v", c.id, got, c.want)
		}
	}
}

func nodeOf(t *testing.T, p *Pool) string {
	node, err := p.RouteT(ctxT(t), "test", "k")
	if err != nil {
		t.Fatal(err)
	}
	return node
}

// A session is retired and re-opened with empty capabilities after a
// connection kill.
func TestSessionRetiredAndReopenedEmptyAfterConnectionKill(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	mustSet(t, srv, "k", "tok")
	old := Pin(mustRelease(t, p, "k", "tok").Session)
	if old.Capabilities() != capstore.DelexUnsupported {
		t.Fatalf("capabilities = %v; want delex-unsupported", old.Capabilities())
	}
	id, _ := old.Identity()
	if !srv.KillClient(id.ID) {
		t.Fatal("KillClient found no such client")
	}
	pingBeforeEveryCommand(t, p)
	srv.ResetLog()
	mustSet(t, srv, "k", "tok")
	fresh := Pin(mustRelease(t, p, "k", "tok").Session)
	if fresh == old || !old.Retired() {
		t.Fatal("the killed session was reused")
	}
	if got := lockCommands(srv.Log(), 0); !slices.Equal(got, []string{"DELEX", "DELIFEQ"}) {
		t.Fatalf("after reconnect sent %v; want fresh discovery [DELEX DELIFEQ]", got)
	}
}

// A session is retired and re-opened with empty capabilities after a
// failover to a node of another profile.
func TestSessionRetiredAndReopenedEmptyAfterFailover(t *testing.T) {
	srv := startSim(t, sim.Redis70)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	mustSet(t, srv, "k", "tok")
	old := Pin(mustRelease(t, p, "k", "tok").Session)
	if !old.Capabilities().Has(capstore.DelexUnsupported | capstore.DelifeqUnsupported) {
		t.Fatalf("capabilities = %v; want DELEX and DELIFEQ unsupported", old.Capabilities())
	}
	if err := srv.Failover(sim.Redis84); err != nil {
		t.Fatal(err)
	}
	pingBeforeEveryCommand(t, p)
	srv.ResetLog()
	mustSet(t, srv, "k", "tok")
	fresh := Pin(mustRelease(t, p, "k", "tok").Session)
	if fresh == old || fresh.Capabilities() != 0 {
		t.Fatalf("after failover: same session %v, capabilities %v", fresh == old, fresh.Capabilities())
	}
	if got := lockCommands(srv.Log(), 0); !slices.Equal(got, []string{"DELEX"}) {
		t.Fatalf("after failover to redis-8.4 sent %v; want [DELEX]", got)
	}
}

func TestCommandOnKilledSessionIsNotSubmittedOrUncertainNeverReplayed(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	ctx := ctxT(t)
	s, err := p.SessionForT(ctx, nodeOf(t, p))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.Identity()
	srv.KillClient(id.ID)
	pingBeforeEveryCommand(t, p)
	_, err = s.Release(ctx, "k", "tok")
	if !errors.Is(err, ErrNotSubmitted) || !errors.Is(err, ErrSessionRetired) {
		t.Fatalf("Release on a dead session = %v; want not submitted (retired)", err)
	}
}

// With the server gone, a session cannot open (dial failure) and nothing
// was submitted: ownership is unchanged and a retry is safe.
func TestDialFailureIsNotSubmitted(t *testing.T) {
	srv, err := sim.Start(ctxT(t), sim.Config{Profile: sim.Redis84, Password: simPassword})
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	node := nodeOf(t, p)
	if _, err := p.SessionForT(ctxT(t), node); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	pingBeforeEveryCommand(t, p)
	_, err = p.Release(ctxT(t), "k", "tok")
	if !errors.Is(err, ErrNotSubmitted) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("Release with the server gone = %v; want not submitted", err)
	}
}

// READONLY proves the node is no longer the primary: the error is definite
// and the session is retired, so the next call opens a fresh one.
func TestReadOnlyReplyRetiresTheSession(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	mustSet(t, srv, "k", "tok")
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "DELEX", Error: "READONLY You can't write against a read only replica."})
	res, err := p.Release(ctxT(t), "k", "tok")
	if !errors.Is(err, ErrServerReply) || res.Owned || res.Session == nil || !Pin(res.Session).Retired() {
		t.Fatalf("Release = %+v, %v; want a definite READONLY error on a retired session", res, err)
	}
	again := mustRelease(t, p, "k", "tok")
	if again.Session == res.Session {
		t.Fatal("the retired session was reused")
	}
}
