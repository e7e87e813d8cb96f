package conn_test

import (
	"errors"
	. "github.com/respire-go/respire/conn"
	"slices"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

func TestFenceKillsTheSessionFromAnotherConnection(t *testing.T) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			srv := startSim(t, profile)
			p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
			ctx := ctxT(t)
			s, err := p.SessionForT(ctx, nodeOf(t, p))
			if err != nil {
				t.Fatal(err)
			}
			id, _ := s.Identity()
			if err := s.ProbeKill(ctx); err != nil {
				t.Fatalf("ProbeKill = %v; want permitted", err)
			}
			srv.ResetLog()
			if err := p.Fence(ctx, s); err != nil {
				t.Fatalf("Fence = %v", err)
			}
			var fence *sim.Entry
			for _, e := range srv.Log() {
				if slices.Equal(e.Args, FenceCommand(id.ID, id.Addr).Args) {
					fence = &e
				}
			}
			if fence == nil || fence.ClientID == id.ID {
				t.Fatalf("fence entry %+v; want CLIENT KILL ID %d ADDR %s from another client", fence, id.ID, id.Addr)
			}
			if !s.Retired() {
				t.Fatal("fenced session not retired")
			}
			pingBeforeEveryCommand(t, p)
			if fresh, err := p.SessionForT(ctx, s.Node()); err != nil || fresh == s {
				t.Fatalf("SessionFor after fence = %v, %v; want a new session", fresh == s, err)
			}
		})
	}
}

func TestProbeKillReportsNoPermission(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	srv.SetUser("locker", "lockerpw", "set", "get", "delifeq", "client|id", "client|info")
	p := newPool(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw"))
	ctx := ctxT(t)
	s, err := p.SessionForT(ctx, nodeOf(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Identity(); !ok {
		t.Fatalf("no identity: %v", s.IdentityError())
	}
	err = s.ProbeKill(ctx)
	var redisErr *ServerError
	if !errors.Is(err, ErrServerReply) || !errors.As(err, &redisErr) {
		t.Fatalf("ProbeKill = %v; want the NOPERM reply", err)
	}
	if err := p.Fence(ctx, s); !errors.As(err, &redisErr) {
		t.Fatalf("Fence = %v; want the NOPERM reply", err)
	}
}

func TestExtendManyPipelinesOnOneSession(t *testing.T) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			srv := startSim(t, profile)
			p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
			ctx := ctxT(t)
			s, err := p.SessionForT(ctx, nodeOf(t, p))
			if err != nil {
				t.Fatal(err)
			}
			mustSet(t, srv, "a", "ta")
			mustSet(t, srv, "b", "other")
			requests := []ExtendRequest{{Key: "a", Token: "ta", TTLMillis: 90000}, {Key: "b", Token: "tb", TTLMillis: 90000}, {Key: "missing", Token: "tc", TTLMillis: 90000}}
			for round := range 2 {
				results := s.ExtendMany(ctx, requests)
				for i, want := range []bool{true, false, false} {
					if results[i].Err != nil || results[i].Owned != want || results[i].Session != s {
						t.Fatalf("round %d request %d: %+v; want owned=%v", round, i, results[i], want)
					}
				}
			}
			if got := srv.Exec("PTTL", "a"); got[:3] != ":89" && got[:3] != ":90" {
				t.Fatalf("PTTL a = %q; want ~90000", got)
			}
			if got := srv.Exec("EXISTS", "missing"); got != ":0\r\n" {
				t.Fatalf("ExtendMany created a missing key: %q", got)
			}
		})
	}
}

func TestFencesAreShared_ConcurrentCallersGetOneKill(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	ctx := ctxT(t)
	s, err := p.SessionForT(ctx, nodeOf(t, p))
	if err != nil {
		t.Fatal(err)
	}
	id, ok := s.Identity()
	if !ok {
		t.Fatal("the session has no identity")
	}
	kill := FenceCommand(id.ID, id.Addr).Args
	isKill := func(args []string) bool { return slices.Equal(args, kill) }
	gate, fired := make(chan struct{}), make(chan sim.FaultRecord, 1)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "CLIENT", Match: isKill, Gate: gate, Fired: fired})
	const callers = 8
	errs := make(chan error, callers)
	go func() { errs <- p.Fence(ctx, s) }()
	<-fired // the first kill is on the server, its reply held back
	for range callers - 1 {
		go func() { errs <- p.Fence(ctx, s) }()
	}
	time.Sleep(20 * time.Millisecond) // let the others join the kill in flight
	close(gate)
	for range callers {
		if err := <-errs; err != nil {
			t.Fatalf("Fence = %v; want nil for every caller", err)
		}
	}
	if err := p.Fence(ctx, s); err != nil || !s.Fenced() {
		t.Fatalf("a fence after the answer = %v (fenced %v); want nil at once", err, s.Fenced())
	}
	n := 0
	for _, e := range srv.Log() {
		if isKill(e.Args) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d CLIENT KILL commands for one session; want 1 shared by every caller", n)
	}
}
