package leasesuite

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/internal/simtest"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

const simPassword = "pw"

// lockCommandNames are the commands a lock operation may put on the wire.
var lockCommandNames = []string{"SET", "GET", "DELEX", "DELIFEQ", "EVALSHA", "EVAL", "ASKING"}

// startSim starts a simulated node (default password simPassword) and checks,
// when the test ends, that no INFO or COMMAND was ever sent to it.
func startSim(t *testing.T, cfg sim.Config) *sim.Server {
	t.Helper()
	if cfg.Password == "" {
		cfg.Password = simPassword
	}
	return simtest.Start(t, cfg)
}

func assertNoDiscoveryCommands(t testing.TB, log []sim.Entry) {
	t.Helper()
	simtest.AssertNoDiscoveryCommands(t, log)
}

// clientOf describes the client of addrs for user with password; plain
// turns rueidis' client-side caching off (see Client.Plain).
func clientOf(addrs []string, user, password string, plain bool) Client {
	return Client{Addrs: addrs, User: user, Password: password, Plain: plain}
}

// newLocks returns Locks of tr on a new client c, closed when the test ends.
func newLocks(t *testing.T, tr Transport, c Client, opts ...lease.Option) *lease.Locks {
	t.Helper()
	locks, _ := tr.Locks(t, c, opts...)
	return locks
}

// coreOf is the driver's view of a lock (lease.Lock is actor.Lock).
func coreOf(l *lease.Lock) *actor.Lock { return (*actor.Lock)(l) }

// wireOf is a token as the server stores it.
func wireOf(t lease.Token) string { return string(t.Bytes()) }

// lockCommands returns the lock commands in log, in order, each by name.
func lockCommands(log []sim.Entry) []string {
	var out []string
	for _, e := range log {
		name := strings.ToUpper(e.Args[0])
		if !slices.Contains(lockCommandNames, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// lockArgs returns the args of the lock commands in log.
func lockArgs(log []sim.Entry) [][]string {
	var out [][]string
	for _, e := range log {
		if slices.Contains(lockCommandNames, strings.ToUpper(e.Args[0])) {
			out = append(out, e.Args)
		}
	}
	return out
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func tok(s string) lease.Token { return lease.TokenFromBytes([]byte(s)) }

// realRedis70 returns the address and password of the real redis-server 7.0
// given by the environment, or skips.
func realRedis70(t *testing.T) (addr, password string) {
	t.Helper()
	addr = os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		t.Skip("RESPIRE_REAL_REDIS70 not set: no real redis-server 7.0 to test against (the Makefile starts one)")
	}
	return addr, os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
}

// fmtSscanInt parses a RESP integer reply such as ":29999\r\n".
func fmtSscanInt(reply string, out *int64) (int, error) {
	return fmt.Sscanf(reply, ":%d\r\n", out)
}

// wireServer is what the wire tests need from a server: the sim node and a
// real redis-server (Monitored) both provide it.
type wireServer interface {
	Addr() string
	Exec(args ...string) string
	Log() []sim.Entry
	ResetLog()
	SetUser(name, password string, commands ...string)
}

// target is one server under test, and the transport under test.
type target struct {
	tr       Transport
	profile  sim.Profile
	srv      wireServer
	password string
	clock    *sim.ManualClock // nil on a real server (real time)
	real     bool
}

// visible returns the part of an expected command sequence the server's log
// can show: a real server's MONITOR never shows commands rejected as
// unknown (DELEX, DELIFEQ on Redis 7.0); those are counted with
// unknownCommandErrors instead.
func (tg *target) visible(want []string) []string {
	if !tg.real {
		return want
	}
	var out []string
	for _, name := range want {
		if name != "DELEX" && name != "DELIFEQ" {
			out = append(out, name)
		}
	}
	return out
}

// unknownCommandErrors returns how many ERR replies a real server has sent
// (INFO errorstats, admin connection); -1 on a sim node.
func (tg *target) unknownCommandErrors(t *testing.T) int {
	if !tg.real {
		return -1
	}
	info := tg.srv.Exec("INFO", "errorstats")
	for _, line := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "errorstat_ERR:count="); ok {
			n, _ := strconv.Atoi(rest)
			return n
		}
	}
	return 0
}

// locks returns Locks of the transport under test on a new client of the
// default user.
func (tg *target) locks(t *testing.T, opts ...lease.Option) *lease.Locks {
	return newLocks(t, tg.tr, clientOf([]string{tg.srv.Addr()}, "", tg.password, false), opts...)
}

// forEachServer runs fn once per sim profile on a fresh node (with a manual
// clock) and once against the real redis-server 7.0 from the environment.
func forEachServer(t *testing.T, tr Transport, fn func(t *testing.T, tg *target)) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			clock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
			srv := startSim(t, sim.Config{Profile: profile, Clock: clock, History: true})
			fn(t, &target{tr: tr, profile: profile, srv: srv, password: simPassword, clock: clock})
		})
	}
	t.Run("real-redis-7.0", func(t *testing.T) {
		addr, password := realRedis70(t)
		realserver.Lock(t, addr)
		srv := startRealServer(t, addr, password)
		fn(t, &target{tr: tr, profile: sim.Redis70, srv: srv, password: password, real: true})
	})
}

// startRealServer clears the real server at addr and reads its MONITOR
// stream; when the test ends no INFO or COMMAND may have been sent to it.
func startRealServer(t *testing.T, addr, password string) *Monitored {
	t.Helper()
	return StartMonitored(t, addr, password, assertNoDiscoveryCommands)
}

// idleChecked returns tr's idle-check control (conn.Pool and the goredis
// transport both have one), failing t when it has none.
func idleChecked(t *testing.T, tr conn.Transport) interface {
	SetIdleCheck(time.Duration) time.Duration
} {
	t.Helper()
	ic, ok := tr.(interface {
		SetIdleCheck(time.Duration) time.Duration
	})
	if !ok {
		t.Fatalf("the transport %T has no SetIdleCheck", tr)
	}
	return ic
}

// trackingRefused reports whether the transport of locks remembers that
// node refused tracking (conn.Pool's and the goredis transport's
// TrackingRefused), failing t when it cannot say.
func trackingRefused(t *testing.T, locks *lease.Locks, node string) bool {
	t.Helper()
	tr, ok := leaseinternal.Driver(locks).Transport().(interface{ TrackingRefused(node string) bool })
	if !ok {
		t.Fatalf("the transport %T has no TrackingRefused", leaseinternal.Driver(locks).Transport())
	}
	return tr.TrackingRefused(node)
}
