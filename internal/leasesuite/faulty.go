package leasesuite

import (
	"context"
	"github.com/respire-go/respire/lease"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// faulty is a server under test reached through an in-process fault proxy:
// every socket the library opens to it can be stalled, delayed or reset,
// and the server itself (sim node or real redis-server) is untouched.
type faulty struct {
	*target
	proxy *faultproxy.Proxy
}

// forEachFaultyServer runs fn against every sim profile and the real
// redis-server 7.0 (see forEachServer), each behind its own fault proxy.
func forEachFaultyServer(t *testing.T, tr Transport, fn func(t *testing.T, f *faulty)) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		p, err := faultproxy.Start(tg.srv.Addr())
		if err != nil {
			t.Fatalf("fault proxy: %v", err)
		}
		t.Cleanup(func() { _ = p.Close() })
		fn(t, &faulty{target: tg, proxy: p})
	})
}

// locks returns Locks on a new client that connects through the proxy, its
// session already open and its fencing permission probed (a first release
// on a session sends CLIENT KILL … SKIPME yes first, and a test that stalls
// the socket means to hold the lock command, not the probe). The proxy's
// stalls are lifted when the test ends, before the Locks closes.
func (f *faulty) locks(t *testing.T, opts ...lease.Option) *lease.Locks {
	t.Helper()
	locks := newLocks(t, f.tr, clientOf([]string{f.proxy.Addr()}, "", f.password, false), opts...)
	t.Cleanup(func() { f.proxy.UnstallAll(faultproxy.Both) })
	prime, err := locks.Acquire(ctxT(t), "prime", time.Minute)
	if err != nil {
		t.Fatalf("priming the session: %v", err)
	}
	if _, err := prime.Release(ctxT(t)); err != nil {
		t.Fatalf("priming the session: %v", err)
	}
	return locks
}

// connOf returns the proxied connection that carries session s: the server
// reports the proxy's upstream address as the session's addr=.
func (f *faulty) connOf(t *testing.T, s conn.Session) *faultproxy.Conn {
	t.Helper()
	id, ok := s.Identity()
	if !ok {
		t.Fatal("the session has no identity")
	}
	for _, c := range f.proxy.Conns() {
		if c.UpstreamLocalAddr() == id.Addr {
			return c
		}
	}
	t.Fatalf("no proxied connection carries session %s", id.Addr)
	return nil
}

// sessionConn returns the proxied connection of the session lock's
// commands ride (standalone mode).
func (f *faulty) sessionConn(t *testing.T, lock *lease.Lock) *faultproxy.Conn {
	t.Helper()
	return f.connOf(t, coreOf(lock).Driver().StandaloneSession())
}

// waitEntry polls the server's log (bounded) until an entry matches.
func waitEntry(t *testing.T, srv wireServer, match func(sim.Entry) bool) sim.Entry {
	t.Helper()
	var found sim.Entry
	eventually(t, "a command in the server's log", func() bool {
		i := slices.IndexFunc(srv.Log(), match)
		if i >= 0 {
			found = srv.Log()[i]
		}
		return i >= 0
	})
	return found
}

// countArgs counts log entries whose args contain every one of parts.
func countArgs(log []sim.Entry, name string, parts ...string) int {
	n := 0
	for _, e := range log {
		if strings.EqualFold(e.Args[0], name) && containsAll(e.Args, parts) {
			n++
		}
	}
	return n
}

func containsAll(args, parts []string) bool {
	for _, p := range parts {
		if !slices.Contains(args, p) {
			return false
		}
	}
	return true
}

// isDelete matches a release command of token, whichever the server needs.
func isDelete(token string) func(sim.Entry) bool {
	return func(e sim.Entry) bool {
		name := strings.ToUpper(e.Args[0])
		switch name {
		case "DELEX", "DELIFEQ":
			return slices.Contains(e.Args, token)
		case "EVALSHA", "EVAL":
			return slices.Contains(e.Args, token) && len(e.Args) == 5 // the release script: KEYS[1], ARGV[1]
		}
		return false
	}
}

// deletesOf counts the release commands of token the server ran with an
// effect: on a sim node, from its execution history (a refused fallback step
// is an error reply); on a real server, from MONITOR, which shows no
// command it does not know, with the scripts loaded beforehand (loadScripts)
// so that no EVALSHA is refused.
func deletesOf(tg *target, token string) int {
	n := 0
	if h, ok := tg.srv.(interface{ History() []sim.Execution }); ok {
		for _, e := range h.History() {
			if isDelete(token)(sim.Entry{Args: e.Args}) && !strings.HasPrefix(e.Reply, "-") {
				n++
			}
		}
		return n
	}
	for _, e := range tg.srv.Log() {
		if isDelete(token)(e) {
			n++
		}
	}
	return n
}

// loadScripts loads the lock scripts on a real server, so that every
// EVALSHA finds its script (see deletesOf).
func loadScripts(tg *target) {
	if tg.real {
		tg.srv.Exec("SCRIPT", "LOAD", conn.ReleaseScript)
		tg.srv.Exec("SCRIPT", "LOAD", conn.ExtendScript)
	}
}

// ctxFor returns a context that ends after d (and when the test ends).
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// kills counts the CLIENT KILL … ADDR … fences the server ran: from the log
// of a sim node; from INFO commandstats on a real server, whose MONITOR
// does not show admin commands (that count includes the SKIPME probes, so
// compare it with a count taken before).
func kills(tg *target) int {
	if !tg.real {
		n := 0
		for _, e := range tg.srv.Log() {
			if isKill(e) {
				n++
			}
		}
		return n
	}
	for _, line := range strings.Split(tg.srv.Exec("INFO", "commandstats"), "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_client|kill:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// waitFenced waits (bounded) until the server ran more fences than before.
func waitFenced(t *testing.T, tg *target, before int) {
	t.Helper()
	eventually(t, "a fence (CLIENT KILL) on the server", func() bool { return kills(tg) > before })
}
