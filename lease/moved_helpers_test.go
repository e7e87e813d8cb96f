package lease

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// Helpers of the tests that stayed in package lease (the behaviour
// suite, internal/leasesuite, has its own copies of those it needs).

// pushStatsOf returns what the push hub of locks did so far.
func pushStatsOf(locks *Locks) actor.PushStats { return locks.driver().PushStats() }

// parkedWaiters returns how many waiters of wireKey are parked on a tracked
// key (armed, no baton out).
func parkedWaiters(locks *Locks, wireKey string) int {
	k := locks.driver().PushKey(wireKey)
	if !k.Entry || !k.Armed || k.BatonOut {
		return 0
	}
	return k.Waiters
}

// holderArmed reports whether a holder of wireKey is registered and its key
// tracked: its last read answered with no invalidation since, no read is
// queued or in flight and no retry is pending. Holders keep no entry while
// their key is tracked; one exists only while a read is due or waiters
// wait (then its armed flag says whether the key is tracked).
func holderArmed(locks *Locks, wireKey string) bool {
	k := locks.driver().PushKey(wireKey)
	if k.Holders == 0 || k.RetryPending {
		return false
	}
	return !k.Entry || k.Armed && !k.Queued && !k.Reading
}

// countSetNX counts SET key … NX … in log.
func countSetNX(log []sim.Entry, key string) int {
	n := 0
	for _, e := range log {
		if len(e.Args) >= 4 && strings.EqualFold(e.Args[0], "SET") && e.Args[1] == key && strings.EqualFold(e.Args[3], "NX") {
			n++
		}
	}
	return n
}

// isExtend matches a renewal of key: SET … IFEQ … or the extend script.
func isExtend(key string) func(sim.Entry) bool {
	return func(e sim.Entry) bool {
		if isRenewal(key)(e) {
			return true
		}
		return len(e.Args) >= 4 && (strings.EqualFold(e.Args[0], "EVALSHA") && e.Args[1] == conn.ExtendScriptSHA ||
			strings.EqualFold(e.Args[0], "EVAL") && e.Args[1] == conn.ExtendScript) && e.Args[3] == key
	}
}

func countMatching(log []sim.Entry, match func(sim.Entry) bool) int {
	n := 0
	for _, e := range log {
		if match(e) {
			n++
		}
	}
	return n
}

// gateWatcherReads holds the reply of the next GET on srv's watcher
// connection, and so every read sent after it there, until the returned
// func (also run when the test ends) is called.
func gateWatcherReads(t *testing.T, srv *sim.Server) (open func()) {
	t.Helper()
	id := watcherID(t, srv)
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "GET", ClientID: id, Gate: gate})
	return open
}

type acquired struct {
	lock *Lock
	err  error
	at   time.Time
}

// watcherID returns the CLIENT ID of srv's one tracking connection.
func watcherID(t *testing.T, srv *sim.Server) int64 {
	t.Helper()
	ids := trackingClientIDs(srv)
	if len(ids) != 1 {
		t.Fatalf("tracking connections %v; want the watcher alone", ids)
	}
	id, err := strconv.ParseInt(ids[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// trackingClientIDs returns the ids of the connections with tracking on
// (CLIENT LIST flags containing t), from the admin connection.
func trackingClientIDs(srv wireServer) []string {
	var ids []string
	for _, line := range strings.Split(srv.Exec("CLIENT", "LIST"), "\n") {
		var id, flags string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(f, "flags="); ok {
				flags = v
			}
		}
		if id != "" && strings.Contains(flags, "t") {
			ids = append(ids, id)
		}
	}
	return ids
}

// faulty is a server under test reached through an in-process fault proxy:
// every socket the library opens to it can be stalled, delayed or reset,
// and the server itself (sim node or real redis-server) is untouched.
type faulty struct {
	*target
	proxy *faultproxy.Proxy
}

// forEachFaultyServer runs fn against every sim profile and the real
// redis-server 7.0 (see forEachServer), each behind its own fault proxy.
func forEachFaultyServer(t *testing.T, fn func(t *testing.T, f *faulty)) {
	forEachServer(t, func(t *testing.T, tg *target) {
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
func (f *faulty) locks(t *testing.T, opts ...Option) *Locks {
	t.Helper()
	locks := newLocks(t, newClient(t, []string{f.proxy.Addr()}, "", f.password, false), opts...)
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

// loadScripts loads the lock scripts on a real server, so that every
// EVALSHA finds its script (see deletesOf).
func loadScripts(tg *target) {
	if tg.real {
		tg.srv.Exec("SCRIPT", "LOAD", conn.ReleaseScript)
		tg.srv.Exec("SCRIPT", "LOAD", conn.ExtendScript)
	}
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

// frozenClock is a clock whose time is set by the test and whose timers
// never fire: what a process sees in the first moments after it resumes
type frozenClock struct {
	mu  sync.Mutex
	now time.Duration
}

func (c *frozenClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *frozenClock) set(now time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

func (c *frozenClock) AfterFunc(time.Duration, func()) actor.Timer { return frozenTimer{} }

// isKill matches a CLIENT KILL ID … ADDR … fence (not the SKIPME probe).
func isKill(e sim.Entry) bool {
	return len(e.Args) >= 6 && strings.EqualFold(e.Args[0], "CLIENT") && strings.EqualFold(e.Args[1], "KILL") &&
		strings.EqualFold(e.Args[4], "ADDR")
}

type frozenTimer struct{}

func (frozenTimer) Stop() bool { return true }

func (frozenTimer) Reset(time.Duration) bool { return true }
