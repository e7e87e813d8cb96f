package lease

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// Helpers of the tests that stayed in package lease (the behaviour
// suite, internal/leasesuite, has its own copies of those it needs).

// pushStatsOf returns what the push hub of locks did so far.
func pushStatsOf(locks *Locks) actor.PushStats { return locks.Driver().PushStats() }

// parkedWaiters returns how many waiters of wireKey are parked on a tracked
// key (armed, no baton out).
func parkedWaiters(locks *Locks, wireKey string) int {
	k := locks.Driver().PushKey(wireKey)
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
	k := locks.Driver().PushKey(wireKey)
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
