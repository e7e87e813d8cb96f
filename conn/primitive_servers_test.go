package conn_test

import (
	. "github.com/respire-go/respire/conn"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/internal/simtest"
	"github.com/respire-go/respire/sim"
)

// primServer is one server the semaphore and read/write-lock scripts run
// on over real sockets: each sim profile, and the real redis-server 7.0
// when RESPIRE_REAL_REDIS70 names one.
type primServer struct {
	name   string
	pool   *Pool
	admin  rueidis.Client              // an outsider's client of the server
	exec   func(args ...string) string // admin command; reply as text (":n", the string, "-ERR …", "<nil>")
	prefix string                      // key prefix that isolates the test on a shared server
}

func primitiveServers(t *testing.T) []primServer {
	var out []primServer
	for _, p := range sim.Profiles {
		srv := startSim(t, p)
		admin := newOutsider(t, []string{srv.Addr()}, "", simPassword)
		out = append(out, primServer{string(p), newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword)), admin,
			adminExec(t, admin), ""})
	}
	if addr := os.Getenv("RESPIRE_REAL_REDIS70"); addr != "" {
		lockRealServer(t, addr)
		password := os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
		admin := newOutsider(t, []string{addr}, "", password)
		prefix := "conn-prim-" + strings.ReplaceAll(t.Name(), "/", "-") + ":"
		out = append(out, primServer{"real-redis-7.0", newPool(t, newClient(t, []string{addr}, "", password)), admin,
			adminExec(t, admin), prefix})
		t.Cleanup(func() { deletePrefixed(t, admin, prefix) })
	}
	return out
}

// adminExec runs a command on client and renders its reply as text.
func adminExec(t *testing.T, client rueidis.Client) func(args ...string) string {
	return func(args ...string) string {
		msg, err := client.Do(ctxT(t), client.B().Arbitrary(args...).Build()).ToMessage()
		switch {
		case msg.IsNil():
			return "<nil>"
		case err != nil:
			return "-" + err.Error()
		}
		if msg.IsInt64() {
			n, _ := msg.AsInt64()
			return ":" + strconv.FormatInt(n, 10)
		}
		if msg.IsString() {
			s, _ := msg.ToString()
			return s
		}
		if f, err := msg.AsFloat64(); err == nil { // a RESP3 double (ZSCORE)
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return "<" + msg.String() + ">"
	}
}

// deletePrefixed removes the keys a test left on a shared real server.
func deletePrefixed(t *testing.T, client rueidis.Client, prefix string) {
	keys, err := client.Do(ctxT(t), client.B().Keys().Pattern(prefix+"*").Build()).AsStrSlice()
	if err == nil && len(keys) > 0 {
		client.Do(ctxT(t), client.B().Del().Key(keys...).Build())
	}
}

// clockedSim is a sim node whose clock the test moves.
type clockedSim struct {
	name  string
	pool  *Pool
	srv   *sim.Server
	clock *sim.ManualClock
}

// clockedSims starts one node per profile on a manual clock set far from
// real time (2001), so that scores can only come from the server's TIME.
func clockedSims(t *testing.T) []clockedSim {
	var out []clockedSim
	for _, p := range sim.Profiles {
		clock := sim.NewManualClock(time.Date(2001, 2, 3, 4, 5, 6, 789_000_000, time.UTC))
		srv := simtest.Start(t, sim.Config{Profile: p, Password: simPassword, Clock: clock})
		out = append(out, clockedSim{string(p), newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword)), srv, clock})
	}
	return out
}

// mustDo runs op and fails the test on an error.
func mustDo(t *testing.T, p *Pool, op Op) Result {
	t.Helper()
	res, err := p.Do(ctxT(t), op, nil)
	if err != nil {
		t.Fatalf("%s: %v", op.Name(), err)
	}
	return res
}

func mustSemaphore(t *testing.T, prefix, name string, limit int) Semaphore {
	t.Helper()
	s, err := NewSemaphore(prefix, name, limit)
	if err != nil {
		t.Fatalf("NewSemaphore(%q, %q, %d) = %v", prefix, name, limit, err)
	}
	return s
}

func mustRWLock(t *testing.T, prefix, name string) RWLock {
	t.Helper()
	l, err := NewRWLock(prefix, name)
	if err != nil {
		t.Fatalf("NewRWLock(%q, %q) = %v", prefix, name, err)
	}
	return l
}

// clockedServer is a primServer whose time the test moves: a sim server on
// a virtual clock (advance moves it; nothing else does), or the real
// redis-server (advance sleeps).
type clockedServer struct {
	primServer
	advance func(time.Duration)
	virtual bool // advance moves the server's clock exactly
}

// clockedServers is primitiveServers with the sim servers on virtual
// clocks, for the scripts' rules about time the server measures (TIME).
func clockedServers(t *testing.T) []clockedServer {
	var out []clockedServer
	for _, p := range sim.Profiles {
		clock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
		srv := simtest.Start(t, sim.Config{Profile: p, Password: simPassword, Clock: clock})
		admin := newOutsider(t, []string{srv.Addr()}, "", simPassword)
		out = append(out, clockedServer{primServer{string(p), newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword)), admin,
			adminExec(t, admin), ""}, clock.Advance, true})
	}
	for _, s := range primitiveServers(t) {
		if s.name == "real-redis-7.0" {
			out = append(out, clockedServer{s, time.Sleep, false})
		}
	}
	return out
}
