package lease

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// wireLog is what the round-trip tests read: a sim node's command log or
// a real server's MONITOR.
type wireLog interface {
	ResetLog()
	Log() []sim.Entry
}

// Goal: uncontended, once its script is cached and its session open, a
// permit costs two round trips: TryAcquire one EVALSHA, Release one
// EVALSHA, and nothing else reaches the server (counted on the wire: the
// sim's command log, every client's; MONITOR on the real server). A read
// hold costs the same. The Locks' idle check is an hour, so that no
// liveness PING precedes a command (a session idle for a second, which a
// loaded machine gives it time to be, is pinged first): every command
// counted is one of the pair's.
func TestPermitInTwoRoundTrips_UncontendedAcquireAndReleaseAreOneScriptEach(t *testing.T) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			srv := startSim(t, sim.Config{Profile: profile})
			locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), WithIdleCheck(time.Hour))
			checkTwoRoundTrips(t, locks, srv)
		})
	}
	t.Run("real-redis-7.0", func(t *testing.T) {
		addr, password := realRedis70(t)
		lockRealServer(t, addr)
		srv := startRealServer(t, addr, password)
		locks := newLocks(t, newClient(t, []string{addr}, "", password, false), WithIdleCheck(time.Hour))
		checkTwoRoundTrips(t, locks, srv)
	})
}

// checkTwoRoundTrips warms a semaphore and a read/write lock up (scripts
// loaded, session open), then counts every command of pairs of TryAcquire
// + Release (TryRLock + Release).
func checkTwoRoundTrips(t *testing.T, locks *Locks, log wireLog) {
	t.Helper()
	ctx := ctxT(t)
	sem, rw := locks.Semaphore("rt", 8), locks.RWLock("rt")
	pair := map[string]func() error{
		"permit": func() error {
			att, err := sem.TryAcquire(ctx, time.Minute)
			if err != nil || !att.Acquired() {
				return fmt.Errorf("TryAcquire: %v, %v; want a permit", att.Acquired(), err)
			}
			if out, err := att.Lock().Release(ctx); err != nil || out != Released {
				return fmt.Errorf("Release: %v, %v; want released", out, err)
			}
			return nil
		},
		"read": func() error {
			att, err := rw.TryRLock(ctx, time.Minute)
			if err != nil || !att.Acquired() {
				return fmt.Errorf("TryRLock: %v, %v; want a read hold", att.Acquired(), err)
			}
			if out, err := att.Lock().Release(ctx); err != nil || out != Released {
				return fmt.Errorf("Release: %v, %v; want released", out, err)
			}
			return nil
		},
	}
	scripts := map[string][2]string{"permit": {conn.SemaphoreAcquireScriptSHA, conn.HolderReleaseScriptSHA},
		"read": {conn.ReadAcquireScriptSHA, conn.HolderReleaseScriptSHA}}
	for _, kind := range []string{"permit", "read"} {
		if err := pair[kind](); err != nil { // warm-up: NOSCRIPT, the session's dial
			t.Fatalf("%s, warm-up: %v", kind, err)
		}
		log.ResetLog()
		const pairs = 10
		for range pairs {
			if err := pair[kind](); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
		}
		got := log.Log()
		if len(got) != 2*pairs {
			t.Fatalf("%s: %d pairs sent %d commands; want %d (two round trips a pair):\n%s", kind, pairs, len(got), 2*pairs, commandList(got))
		}
		for i, e := range got {
			want := scripts[kind][i%2]
			if strings.ToUpper(e.Args[0]) != "EVALSHA" || len(e.Args) < 2 || e.Args[1] != want {
				t.Fatalf("%s: command %d is %v; want EVALSHA %s", kind, i, e.Args[:min(2, len(e.Args))], want)
			}
		}
		t.Logf("%s: %d pairs, %d commands", kind, pairs, len(got))
	}
}

// commandList renders the names of logged commands, one a line.
func commandList(log []sim.Entry) string {
	var b strings.Builder
	for _, e := range log {
		fmt.Fprintf(&b, "  client %d: %s\n", e.ClientID, strings.Join(e.Args[:min(2, len(e.Args))], " "))
	}
	return b.String()
}
