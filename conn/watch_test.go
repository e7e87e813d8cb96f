package conn_test

import (
	"errors"
	. "github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/wire"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// TestPushWakesWaiters_WatchReadTracksTheKey: WatchRead reads the key on
// the watcher and tracks it: the next change by another client reaches the
// handler once, with the key; the watcher's setup and reads are exactly
// CLIENT TRACKING OFF, CLIENT TRACKING ON OPTIN NOLOOP, CLIENT INFO, then
// CLIENT CACHING YES + GET per read.
func TestPushWakesWaiters_WatchReadTracksTheKey(t *testing.T) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			srv := startSim(t, profile)
			p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
			var mu sync.Mutex
			var got [][]string
			p.SetInvalidationHandler(func(_ string, keys []string) {
				mu.Lock()
				got = append(got, keys)
				mu.Unlock()
			})
			mustSet(t, srv, "k", "tok")
			node, token, found, err := p.WatchRead(ctxT(t), "k")
			if err != nil || !found || token != "tok" || node != srv.Addr() {
				t.Fatalf("WatchRead = %q %q %v %v", node, token, found, err)
			}
			srv.Exec("DEL", "k")
			srv.Exec("SET", "k", "again") // not tracked any more: no second push
			// A marker read and changed after: its push comes after any push
			// of k on the same connection, so once it arrived, k's are all in.
			if _, _, _, err := p.WatchRead(ctxT(t), "marker"); err != nil {
				t.Fatal(err)
			}
			srv.Exec("SET", "marker", "x")
			deadline := time.Now().Add(5 * time.Second)
			for {
				mu.Lock()
				n := len(got)
				last := n > 0 && slices.Equal(got[n-1], []string{"marker"})
				mu.Unlock()
				if last || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.EqualFunc(got, [][]string{{"k"}, {"marker"}}, slices.Equal) {
				t.Fatalf("invalidations %v; want [k] once, then [marker]", got)
			}
			var watcher []string
			for _, e := range srv.Log() {
				if e.Args[0] == "CLIENT" && len(e.Args) > 2 && (e.Args[1] == "TRACKING" && e.Args[2] != "ON" ||
					slices.Equal(e.Args, []string{"CLIENT", "TRACKING", "ON", "OPTIN", "NOLOOP"})) {
					watcher = append(watcher, e.Args[1]+" "+e.Args[2])
				}
			}
			if !slices.Equal(watcher, []string{"TRACKING OFF", "TRACKING ON"}) {
				t.Errorf("tracking setup %v", watcher)
			}
		})
	}
}

// TestPushFallsBackToPolling_RefusalsAreRemembered: a RESP2 connection
// (resp=2 in CLIENT INFO) and a user denied CLIENT TRACKING are refused
// with ErrTrackingRefused, remembered for the node: the next WatchRead
// sends nothing.
func TestPushFallsBackToPolling_RefusalsAreRemembered(t *testing.T) {
	srv := startSim(t, sim.Redis70)
	srv.SetUser("locker", "lockerpw", "set", "get", "client|info")
	resp2 := wire.New(wire.Options{Addrs: []string{srv.Addr()}, Password: simPassword, RESP2: true})
	for name, client := range map[string]Client{
		"resp2":  resp2,
		"noperm": newClient(t, []string{srv.Addr()}, "locker", "lockerpw"),
	} {
		t.Run(name, func(t *testing.T) {
			p := newPool(t, client)
			if _, _, _, err := p.WatchRead(ctxT(t), "k"); !errors.Is(err, ErrTrackingRefused) {
				t.Fatalf("WatchRead: %v; want ErrTrackingRefused", err)
			}
			if !p.TrackingRefused(srv.Addr()) {
				t.Fatal("refusal not remembered")
			}
			srv.ResetLog()
			if _, _, _, err := p.WatchRead(ctxT(t), "k"); !errors.Is(err, ErrTrackingRefused) {
				t.Fatalf("second WatchRead: %v", err)
			}
			for _, e := range srv.Log() { // rueidis' own PINGs and connection handshakes (a socket it redials) aside
				if handshake := len(e.Args) > 1 && strings.EqualFold(e.Args[1], "SETINFO"); handshake {
					continue
				}
				if e.Args[0] == "CLIENT" || e.Args[0] == "GET" {
					t.Fatalf("the remembered refusal sent %v", e.Args)
				}
			}
		})
	}
}

// TestPushFallsBackToPolling_ABusyNodeIsNoRefusal: a LOADING reply to the
// watcher's CLIENT TRACKING says the node cannot serve now, not that it
// refuses: nothing is remembered and the next WatchRead opens a watcher.
func TestPushFallsBackToPolling_ABusyNodeIsNoRefusal(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "CLIENT", Error: "LOADING Redis is loading the dataset in memory",
		Match: func(args []string) bool { return len(args) > 2 && args[1] == "TRACKING" && args[2] == "OFF" }})
	if _, _, _, err := p.WatchRead(ctxT(t), "k"); !errors.Is(err, ErrDidNotRun) || errors.Is(err, ErrTrackingRefused) {
		t.Fatalf("WatchRead on a loading node: %v; want ErrDidNotRun", err)
	}
	if p.TrackingRefused(srv.Addr()) {
		t.Fatal("a loading node was remembered as refusing")
	}
	if _, _, _, err := p.WatchRead(ctxT(t), "k"); err != nil {
		t.Fatalf("WatchRead once loaded: %v", err)
	}
}

// TestPushFallsBackToPolling_ARefusalLastsAsLongAsTheSession: a refusal is
// learned with the node's session; while that session lasts nothing is
// asked again, and once it is retired (the server behind the address may
// be another now) the next read asks again on a fresh watcher.
func TestPushFallsBackToPolling_ARefusalLastsAsLongAsTheSession(t *testing.T) {
	srv := startSim(t, sim.Redis70)
	srv.SetUser("locker", "lockerpw", "set", "get", "client|info", "client|id")
	p := newPool(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw"))
	s, err := p.SessionForT(ctxT(t), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := p.WatchRead(ctxT(t), "k"); !errors.Is(err, ErrTrackingRefused) {
		t.Fatalf("WatchRead: %v; want ErrTrackingRefused", err)
	}
	if !p.TrackingRefused(srv.Addr()) {
		t.Fatal("refusal not remembered while the session lasts")
	}
	s.Close()
	if p.TrackingRefused(srv.Addr()) {
		t.Fatal("refusal still remembered after the session it was learned with was retired")
	}
	srv.ResetLog()
	if _, _, _, err := p.WatchRead(ctxT(t), "k"); !errors.Is(err, ErrTrackingRefused) {
		t.Fatalf("WatchRead after the session was retired: %v; want ErrTrackingRefused again", err)
	}
	asked := false
	for _, e := range srv.Log() {
		asked = asked || (len(e.Args) > 1 && e.Args[0] == "CLIENT" && e.Args[1] == "TRACKING")
	}
	if !asked {
		t.Fatal("the refusal was not learned again on a fresh watcher after the session was retired")
	}
}
