package conn_test

import (
	"errors"
	. "github.com/respire-go/respire/conn"
	"strings"
	"sync"
	"testing"

	"github.com/respire-go/respire/sim"
)

// didNotRunTexts are the replies of a node that cannot serve now, as the
// servers word them.
var didNotRunTexts = []string{
	"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
	"LOADING Redis is loading the dataset in memory",
	"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
}

// forgotten counts the handler's calls that say everything tracked on a
// node is forgotten (keys nil), per node.
type forgotten struct {
	mu    sync.Mutex
	nodes map[string]int
}

// watchForgotten sets p's handler to count its nil calls.
func watchForgotten(p *Pool) *forgotten {
	f := &forgotten{nodes: map[string]int{}}
	p.SetInvalidationHandler(func(node string, keys []string) {
		if keys == nil {
			f.mu.Lock()
			f.nodes[node]++
			f.mu.Unlock()
		}
	})
	return f
}

func (f *forgotten) count(node string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nodes[node]
}

// isCachingYes matches the watcher's CLIENT CACHING YES.
func isCachingYes(args []string) bool {
	return len(args) == 3 && strings.EqualFold(args[1], "CACHING")
}

// TestPushWatcherDropWakes_AnErrorReplyToCachingTellsTheHandler: a watcher
// dropped because a read's CLIENT CACHING YES got an error reply — one that
// says the node cannot serve now (BUSY, LOADING, MASTERDOWN) or a refusal
// (NOPERM, as after an ACL change) — had keys tracked that nothing tracks
// any more: before the read returns, the handler is told once that
// everything on the node is forgotten, as when the connection breaks, and
// the next read tracks on a fresh watcher.
func TestPushWatcherDropWakes_AnErrorReplyToCachingTellsTheHandler(t *testing.T) {
	texts := append(didNotRunTexts, "NOPERM this user has no permissions to run the 'client|caching' command")
	for _, text := range texts {
		code, _, _ := strings.Cut(text, " ")
		t.Run(code, func(t *testing.T) {
			srv := startSim(t, sim.Redis70)
			p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
			f := watchForgotten(p)
			if _, _, _, err := p.WatchRead(ctxT(t), "armed"); err != nil {
				t.Fatal(err)
			}
			first := lastWatcher(t, srv)
			srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "CLIENT", Error: text, Match: isCachingYes})
			_, _, _, err := p.WatchRead(ctxT(t), "other")
			if want := ErrDidNotRun; code == "NOPERM" && !errors.Is(err, ErrTrackingRefused) ||
				code != "NOPERM" && !errors.Is(err, want) {
				t.Fatalf("WatchRead with CACHING answered %s: %v", code, err)
			}
			if n := f.count(srv.Addr()); n != 1 {
				t.Fatalf("the handler was told %d times that the node's keys are forgotten; want once, before the read returned", n)
			}
			if code == "NOPERM" {
				return // remembered as a refusal: nothing is read there while the session lasts
			}
			if _, _, _, err := p.WatchRead(ctxT(t), "armed"); err != nil {
				t.Fatalf("the next read: %v", err)
			}
			if again := lastWatcher(t, srv); again == first {
				t.Fatalf("the read after the drop went to the dropped watcher %d; want a fresh one", first)
			}
			if n := f.count(srv.Addr()); n != 1 {
				t.Fatalf("%d nil calls after the fresh watcher's read; want still 1", n)
			}
		})
	}
}

// TestPushWatcherDropWakes_AnErrorReplyToGetKeepsTheWatcher: a GET on the
// watcher answered BUSY, LOADING or MASTERDOWN fails that key's read alone
// (ErrDidNotRun): the watcher stays, the keys it tracked stay tracked (a
// change still reaches the handler) and the handler is not told that
// anything was forgotten.
func TestPushWatcherDropWakes_AnErrorReplyToGetKeepsTheWatcher(t *testing.T) {
	for _, text := range didNotRunTexts {
		code, _, _ := strings.Cut(text, " ")
		t.Run(code, func(t *testing.T) {
			srv := startSim(t, sim.Valkey90)
			p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
			f := watchForgotten(p)
			inv := &invalidations{keys: map[string]string{}}
			p.SetInvalidationHandler(func(node string, keys []string) {
				if keys == nil {
					f.mu.Lock()
					f.nodes[node]++
					f.mu.Unlock()
					return
				}
				inv.mu.Lock()
				defer inv.mu.Unlock()
				for _, k := range keys {
					inv.keys[k] = node
				}
			})
			if _, _, _, err := p.WatchRead(ctxT(t), "armed"); err != nil {
				t.Fatal(err)
			}
			first := lastWatcher(t, srv)
			srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "GET", Error: text})
			if _, _, _, err := p.WatchRead(ctxT(t), "other"); !errors.Is(err, ErrDidNotRun) {
				t.Fatalf("WatchRead with GET answered %s: %v; want ErrDidNotRun", code, err)
			}
			srv.Exec("SET", "armed", "changed")
			inv.waitFor(t, []string{"armed"})
			if _, _, _, err := p.WatchRead(ctxT(t), "other"); err != nil {
				t.Fatal(err)
			}
			if again := lastWatcher(t, srv); again != first {
				t.Fatalf("the read after the GET's error went to watcher %d; want the same, %d", again, first)
			}
			if n := f.count(srv.Addr()); n != 0 {
				t.Fatalf("the handler was told %d times that everything was forgotten; want never", n)
			}
		})
	}
}

// lastWatcher returns the id of the connection that sent srv's last
// CLIENT CACHING YES: the watcher that read last.
func lastWatcher(t *testing.T, srv *sim.Server) int64 {
	t.Helper()
	log := srv.Log()
	for i := len(log) - 1; i >= 0; i-- {
		if isCachingYes(log[i].Args) {
			return log[i].ClientID
		}
	}
	t.Fatal("no CLIENT CACHING YES in the log")
	return 0
}
