// Package leasesuite is lease's behaviour suite, written once and run on
// every transport: the tests of lease (and of coordination's fenced locks)
// that hold whatever client carries the locks — acquisition, contention,
// waiting (push and polling), keep-alive renewal and loss detection,
// fencing of uncertain commands over a fault proxy, shutdown, key
// prefixes, telemetry — on the sim server's four profiles, the real Redis
// 7.0 (standalone, the 3+3 cluster, Sentinel) and simulated clusters.
//
// A case is a function of a *testing.T and a Transport, the factory of the
// lease.Locks under test. package lease runs every case on rueidis (one
// test function per case, named Test<case name>, so that docs/rules.md
// lists them as before: see lease/suite_test.go); the goredis module runs
// every case on go-redis (goredis.TestGoRedisLeaseSuite_EveryCase). The
// clients that observe or contend from outside (outsiders, admin
// connections) are the same on both: rueidis clients and raw RESP
// connections, never the transport under test.
//
// It is test code: it imports testing and is imported only by tests.
package leasesuite

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/respire-go/respire/lease"
)

// Transport builds lease.Locks over one kind of client. Every function
// registers the Locks' Close, then the client's, with the test's cleanup.
type Transport struct {
	// Name names the transport in messages ("rueidis", "goredis").
	Name string
	// Locks returns Locks on a new client c. closeClient closes the client
	// under the Locks (idempotent), for the tests of a client closed by its
	// owner.
	Locks func(t testing.TB, c Client, opts ...lease.Option) (locks *lease.Locks, closeClient func())
	// Sentinel returns Locks on a new client of the Sentinel set master
	// behind sentinels (password for the sentinels and the data nodes).
	Sentinel func(t testing.TB, sentinels []string, master, password string, opts ...lease.Option) *lease.Locks
	// SentinelAs is Sentinel with the data nodes' user and password (the
	// sentinels take sentinelPassword), for the tests of least-privilege
	// users; it returns the client's error instead of failing t.
	SentinelAs func(t testing.TB, sentinels []string, master, user, password, sentinelPassword string,
		opts ...lease.Option) (*lease.Locks, error)
	// ServerError returns the server's error reply that err carries, as
	// the client reports it (rueidis' *RedisError, go-redis' redis.Error),
	// and false when err carries none.
	ServerError func(err error) (reply string, ok bool)
	// FenceOnOwnConn: the transport sends each fence on a connection it
	// opens for it (go-redis), not on one it already has (rueidis).
	FenceOnOwnConn bool
	// Queued, when not nil, returns the commands (each as its arguments)
	// the Locks' transport was handed and holds queued, unwritten, behind a
	// batch in flight on their connection (go-redis, rueidis, valkey-go: a
	// session's drainer writes one pipeline at a time and sends what was
	// queued meanwhile in the next). Nil: every command is written at once
	// (the root module's own client pipelines on one connection).
	Queued func(locks *lease.Locks) [][]string
}

// Client describes the client a Transport builds.
type Client struct {
	// Addrs: one address is a standalone server, several are the nodes of
	// a cluster.
	Addrs []string
	// User (the default user when "") and Password.
	User, Password string
	// Plain: no client-side caching (rueidis' DisableCache; go-redis has
	// none by default), as for a least-privilege user, who may not turn
	// tracking on for the client's own connections.
	Plain bool
}

// Case is one behaviour of the suite.
type Case struct {
	Name string // the lease test that runs it is Test<Name>
	Run  func(t *testing.T, tr Transport)
}

// cases is every case, registered by the files that define them.
var cases []Case

// register adds cases to the suite (from the files' init).
func register(cs ...Case) { cases = append(cases, cs...) }

// Cases returns every case of the suite, in name order.
func Cases() []Case {
	out := slices.Clone(cases)
	slices.SortFunc(out, func(a, b Case) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// Run runs the case named name on tr; an unknown name fails t.
func Run(t *testing.T, tr Transport, name string) {
	t.Helper()
	for _, c := range cases {
		if c.Name == name {
			c.Run(t, tr)
			return
		}
	}
	t.Fatalf("leasesuite: no case %q", name)
}

// runFlag is the -test.run flag that runs the case named other in the
// test binary running t, the test of the case named current (lease runs
// case X as TestX, the goredis module as TestGoRedisLeaseSuite_EveryCase/X):
// for the cases that re-run themselves, or a helper case, in a child
// process.
func runFlag(t *testing.T, current, other string) string {
	t.Helper()
	name := t.Name()
	i := strings.LastIndex(name, current)
	if i < 0 {
		t.Fatalf("leasesuite: test %q does not run case %q", name, current)
	}
	var parts []string
	for _, p := range strings.Split(name[:i]+other+name[i+len(current):], "/") {
		parts = append(parts, "^"+regexp.QuoteMeta(p)+"$")
	}
	return "-test.run=" + strings.Join(parts, "/")
}
