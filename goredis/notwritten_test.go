package goredis

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// refusingLimiter is a user's go-redis Limiter that refuses every command.
type refusingLimiter struct{}

func (refusingLimiter) Allow() error       { return errors.New("limited") }
func (refusingLimiter) ReportResult(error) {}

// TestGoRedisNotWrittenIsProved_FailuresBeforeTheWrite: whatever go-redis
// returns before it begins writing a round trip — a pool timeout, a
// WRONGPASS answering its own handshake, its Limiter's refusal — the
// round trip (the first on a Conn, which dials) fails with ErrNotWritten,
// leaves every reply unset (the handshake's error reply is not taken for
// the command's), and the server ran none of it; Dial fails alike; a round trip whose write began is never ErrNotWritten
// (TestGoRedisRetriesOff_DroppedReplyIsNotResent).
func TestGoRedisNotWrittenIsProved_FailuresBeforeTheWrite(t *testing.T) {
	srv, _, _ := private(t, false)
	busy := goredisClient(t, srv.Addr, srv.Password, func(o *redis.Options) { o.PoolSize, o.PoolTimeout = 1, 100*time.Millisecond })
	wrongPassword := goredisClient(t, srv.Addr, "not-the-password")
	limited := goredisClient(t, srv.Addr, srv.Password, func(o *redis.Options) { o.Limiter = refusingLimiter{} })
	holder := dial(t, newAdapter(t, busy), srv.Addr)
	if _, err := do(ctxFor(t, 5*time.Second), holder, "PING"); err != nil { // takes the pool's one connection
		t.Fatal(err)
	}
	srv.MustExec(t, "CONFIG", "RESETSTAT")
	for name, client := range map[string]*redis.Client{"pool timeout": busy, "WRONGPASS": wrongPassword, "limiter": limited} {
		c := newAdapter(t, client)
		r, err := do(ctxFor(t, 5*time.Second), undialled(t, c), "SET", key(t, "k"), "v")
		if !errors.Is(err, conn.ErrNotWritten) || r.Kind != 0 {
			t.Errorf("%s: %+v %v, want ErrNotWritten and no reply", name, r, err)
		}
		if cn, err := c.Dial(ctxFor(t, 5*time.Second), srv.Addr); err == nil {
			cn.Close()
			t.Errorf("%s: Dial succeeded", name)
		}
	}
	if info := srv.MustExec(t, "INFO", "commandstats"); strings.Contains(info, "cmdstat_set:") {
		t.Fatalf("a SET reached the server:\n%s", info)
	}
}
