package goredis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/realserver"
)

// The real servers of scripts/with-servers.sh. Go's internal rule is by
// import path, so this module (github.com/respire-go/respire/goredis) may
// import the main module's internal packages in its tests.

// realStandaloneB returns the address and password of the real Redis 7.0,
// locked for this benchmark, or skips.
func realStandaloneB(b *testing.B) (addr, password string) {
	b.Helper()
	addr = os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		b.Skip("RESPIRE_REAL_REDIS70 not set: run under scripts/with-servers.sh")
	}
	realserver.Lock(b, addr)
	return addr, os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
}

// maintOff is a maintenance-notification config that is off. go-redis
// v9.23's default (auto) writes its options when a server refuses the
// handshake, as the sim servers and Redis 7.0 do, from a pinned Conn's
// copy of its client without the client's lock: a data race inside
// go-redis that -race reports (docs/compatibility.md, go-redis).
func maintOff() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

// goredisClient is a standalone go-redis client, closed at test end.
func goredisClient(t testing.TB, addr, password string, tweak ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: addr, Password: password, MaintNotificationsConfig: maintOff()}
	for _, f := range tweak {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newAdapter returns the adapter's conn.Client over client.
func newAdapter(t testing.TB, client redis.UniversalClient) *client {
	t.Helper()
	c, err := newClient(client)
	if err != nil {
		t.Fatalf("newClient: %v", err)
	}
	return c
}

// dial returns a Conn of c to node, closed at test end.
func dial(t testing.TB, c *client, node string) conn.Conn {
	t.Helper()
	cn, err := c.Dial(ctxFor(t, 5*time.Second), node)
	if err != nil {
		t.Fatalf("Dial(%s): %v", node, err)
	}
	t.Cleanup(cn.Close)
	return cn
}

// newEngine returns the wire engine over the adapter of client, closed at
// test end (before the client).
func newEngine(t testing.TB, client redis.UniversalClient) *conn.Engine {
	t.Helper()
	e := conn.NewEngine(conn.EngineConfig{Client: newAdapter(t, client)})
	t.Cleanup(e.Close)
	return e
}

// idleEngine is newEngine with the idle check set to d.
func idleEngine(t testing.TB, client redis.UniversalClient, d time.Duration) *conn.Engine {
	t.Helper()
	e := newEngine(t, client)
	e.SetIdleCheck(d)
	return e
}

// mustDo runs op on e and fails the test on an error.
func mustDo(t testing.TB, e *conn.Engine, op conn.Op) conn.Result {
	t.Helper()
	res, err := e.Do(ctxFor(t, 5*time.Second), op, nil)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return res
}

// classOf is conn.ClassOf, for messages.
func classOf(err error) string { return conn.ClassOf(err).String() }

// undialled returns a Conn of c's client to its standalone node that has
// not dialled yet (Dial dials with a PING): its first round trip dials.
func undialled(t testing.TB, c *client) conn.Conn {
	t.Helper()
	cn := newConn(c, c.addr, c.single.EphemeralConn())
	t.Cleanup(cn.Close)
	return cn
}

// do sends args on cn and returns the one reply.
func do(ctx context.Context, cn conn.Conn, args ...string) (conn.Reply, error) {
	var r [1]conn.Reply
	err := cn.Do(ctx, []conn.Command{{Args: args, Key: -1}}, r[:])
	return r[0], err
}

// token returns a random owner token.
func token(t testing.TB) string {
	t.Helper()
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// key returns a fresh key name for this test.
func key(t testing.TB, what string) string {
	return "goredis-test:" + t.Name() + ":" + what + ":" + token(t)[:8]
}

// ctxFor returns a context ending after d, cancelled at test end.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
