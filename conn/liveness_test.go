package conn_test

import (
	"context"
	"errors"
	. "github.com/respire-go/respire/conn"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// commandsOf returns the upper-cased command names client id sent.
func commandsOf(log []sim.Entry, id int64) []string {
	var out []string
	for _, e := range log {
		if e.ClientID == id {
			out = append(out, strings.ToUpper(e.Args[0]))
		}
	}
	return out
}

func TestASessionIdlePastTheThresholdIsCheckedWithPingBeforeALockCommandADeadOneIsReplacedAndTheCommandIsNotSubmitted(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	ctx := ctxT(t)
	mustSet(t, srv, "k", "tok")
	old := Pin(mustRelease(t, p, "k", "tok").Session)
	oldID, _ := old.Identity()
	pingBeforeEveryCommand(t, p)
	if !srv.KillClient(oldID.ID) {
		t.Fatal("KillClient found no such client")
	}
	srv.ResetLog()
	mustSet(t, srv, "k", "tok")
	if _, err := old.Release(ctx, "k", "tok"); !errors.Is(err, ErrNotSubmitted) || !errors.Is(err, ErrSessionRetired) || !old.Dead() {
		t.Fatalf("Release on the dead idle session = %v (dead %v); want not submitted, retired", err, old.Dead())
	}
	fresh := Pin(mustRelease(t, p, "k", "tok").Session)
	freshID, _ := fresh.Identity()
	if fresh == old || freshID.ID == oldID.ID {
		t.Fatal("the dead session was reused")
	}
	if got := commandsOf(srv.Log(), oldID.ID); len(got) != 0 {
		t.Fatalf("the dead session's client sent %v; want nothing", got)
	}
	got := commandsOf(srv.Log(), freshID.ID)
	if i := slices.Index(got, "PING"); i < 0 || !slices.Equal(got[i:], []string{"PING", "DELEX"}) {
		t.Fatalf("the new session sent %v; want PING then DELEX", got)
	}
}

func TestABusySessionSendsNoPing(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	p.SetIdleCheck(time.Hour)
	for range 3 {
		mustSet(t, srv, "k", "tok")
		mustRelease(t, p, "k", "tok")
	}
	for _, e := range srv.Log() {
		if strings.EqualFold(e.Args[0], "PING") {
			t.Fatalf("a busy session sent %v", e.Args)
		}
	}
}

// Real servers deny PING to a least-privilege user without +ping; the NOPERM
// reply still proves the socket alive, so the lock command is sent on it.
func TestAPingDeniedByACLCountsAsAlive(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	srv.SetUser("locker", "lockerpw", "set", "get", "delex", "client|id", "client|info")
	p := newPool(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw"))
	mustSet(t, srv, "k", "tok")
	first := Pin(mustRelease(t, p, "k", "tok").Session)
	pingBeforeEveryCommand(t, p)
	srv.ResetLog()
	mustSet(t, srv, "k", "tok")
	again := Pin(mustRelease(t, p, "k", "tok").Session)
	if again != first || first.Dead() {
		t.Fatal("a session whose PING was denied was replaced")
	}
	id, _ := first.Identity()
	if got := commandsOf(srv.Log(), id.ID); !slices.Equal(got, []string{"PING", "DELEX"}) {
		t.Fatalf("session sent %v; want PING (denied) then DELEX", got)
	}
}

func TestExtendManyOnADeadIdleSessionIsNotSubmitted(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	ctx := ctxT(t)
	s, err := p.SessionForT(ctx, nodeOf(t, p))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.Identity()
	pingBeforeEveryCommand(t, p)
	srv.KillClient(id.ID)
	for _, r := range s.ExtendMany(ctx, []ExtendRequest{{Key: "a", Token: "tok", TTLMillis: 1000}, {Key: "b", Token: "tok", TTLMillis: 1000}}) {
		if !errors.Is(r.Err, ErrNotSubmitted) || !errors.Is(r.Err, ErrSessionRetired) {
			t.Fatalf("ExtendMany on a dead idle session = %v; want not submitted, retired", r.Err)
		}
	}
}

// A busy session (no PING: the idle threshold is never reached) that has
// carried a command with a cancellable ctx runs in rueidis' background mode
// and watches its socket: when the server kills it, the session is known dead
// before the next command, which goes to a fresh session, not submitted on
// the dead one (no spurious uncertain outcome on a failover or kill).
func TestABusySessionInBackgroundModeIsFoundDeadBeforeTheNextCommand(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	p.SetIdleCheck(time.Hour)
	ctx, cancel := context.WithCancel(ctxT(t)) // cancellable: background mode, watched socket
	defer cancel()
	mustSet(t, srv, "k", "tok")
	first, err := p.Release(ctx, "k", "tok")
	if err != nil || !first.Owned {
		t.Fatalf("first Release = %+v, %v; want owned", first, err)
	}
	oldID, _ := Pin(first.Session).Identity()
	if !srv.KillClient(oldID.ID) {
		t.Fatal("KillClient found no such client")
	}
	for !Pin(first.Session).Dead() { // the background reader sees the close on its own
		select {
		case <-ctx.Done():
			t.Fatal("the killed session was never found dead")
		case <-time.After(time.Millisecond):
		}
	}
	srv.ResetLog()
	mustSet(t, srv, "k", "tok")
	next, err := p.Release(ctx, "k", "tok")
	if err != nil || !next.Owned || next.Session == first.Session {
		t.Fatalf("Release after the kill = %+v, %v; want owned, on a fresh session", next, err)
	}
	if got := commandsOf(srv.Log(), oldID.ID); len(got) != 0 {
		t.Fatalf("the killed session's client sent %v; want nothing", got)
	}
	for _, e := range srv.Log() {
		if strings.EqualFold(e.Args[0], "PING") {
			t.Fatalf("a busy session sent %v", e.Args)
		}
	}
}
