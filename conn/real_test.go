package conn_test

import (
	"context"
	. "github.com/respire-go/respire/conn"
	"os"
	"testing"

	"github.com/respire-go/respire/internal/realserver"

	"github.com/respire-go/respire/capstore"
)

// realRedis70Pool returns a Pool on the real redis-server 7.0 given by the
// environment, or skips.
func realRedis70Pool(t *testing.T) *Pool {
	t.Helper()
	addr := os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		t.Skip("RESPIRE_REAL_REDIS70 not set: no real redis-server 7.0 to test against (the Makefile starts one)")
	}
	lockRealServer(t, addr)
	return newPool(t, newClient(t, []string{addr}, "", os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")))
}

// lockRealServer serialises use of the shared real server across test
// binaries (see realserver.Lock).
func lockRealServer(t *testing.T, addr string) { realserver.Lock(t, addr) }

func TestRealRedis70SessionIdentityFenceAndMemory(t *testing.T) {
	p := realRedis70Pool(t)
	ctx := ctxT(t)
	s, err := p.SessionForT(ctx, nodeOf(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := s.Identity(); !ok || id.ID == 0 || id.Addr == "" {
		t.Fatalf("Identity() = %+v, %v (%v)", id, ok, s.IdentityError())
	}
	if err := s.ProbeKill(ctx); err != nil {
		t.Fatalf("ProbeKill = %v", err)
	}
	if res, err := p.Acquire(ctx, "conn-real", "tok", 60000); !res.Owned || err != nil {
		t.Fatalf("Acquire = %+v, %v", res, err)
	}
	results := s.ExtendMany(ctx, []ExtendRequest{{Key: "conn-real", Token: "tok", TTLMillis: 60000}, {Key: "conn-real-missing", Token: "tok", TTLMillis: 60000}})
	if !results[0].Owned || results[1].Owned || results[0].Err != nil || results[1].Err != nil {
		t.Fatalf("ExtendMany = %+v", results)
	}
	want := capstore.ConditionalSetUnsupported | capstore.ExtendScriptLoaded
	if got := s.Capabilities(); got != want {
		t.Fatalf("capabilities = %v; want %v", got, want)
	}
	if err := p.Fence(ctx, s); err != nil {
		t.Fatalf("Fence = %v", err)
	}
	pingBeforeEveryCommand(t, p)
	res, err := p.Release(ctx, "conn-real", "tok")
	if err != nil || !res.Owned || res.Session == s {
		t.Fatalf("Release after fence = %+v, %v; want owned on a new session", res, err)
	}
	if got := Pin(res.Session).Capabilities(); got != capstore.DelexUnsupported|capstore.DelifeqUnsupported|capstore.ReleaseScriptLoaded {
		t.Fatalf("new session capabilities = %v; want fresh discovery", got)
	}
}

// Real Redis denies PING to a least-privilege user with NOPERM; the reply
// still proves the idle socket alive, so the lock command is sent on it.
func TestRealRedis70PingDeniedByACLCountsAsAlive(t *testing.T) {
	realRedis70Pool(t)
	admin := newOutsider(t, []string{os.Getenv("RESPIRE_REAL_REDIS70")}, "", os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD"))
	ctx := ctxT(t)
	setUser := admin.B().Arbitrary("ACL", "SETUSER", "respire-noping", "reset", "on", ">pw", "~*",
		"+set", "+get", "+evalsha", "+eval", "+del", "+client|id", "+client|info").Build()
	if err := admin.Do(ctx, setUser).Error(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	t.Cleanup(func() {
		admin.Do(context.Background(), admin.B().Arbitrary("ACL", "DELUSER", "respire-noping").Build())
	})
	p := newPool(t, newClient(t, []string{os.Getenv("RESPIRE_REAL_REDIS70")}, "respire-noping", "pw"))
	first, err := p.Release(ctx, "conn-real-noping", "tok")
	if err != nil {
		t.Fatalf("Release = %v", err)
	}
	pingBeforeEveryCommand(t, p)
	again, err := p.Release(ctx, "conn-real-noping", "tok")
	if err != nil || again.Session != first.Session || Pin(first.Session).Dead() {
		t.Fatalf("Release after a denied PING = %+v, %v; want the same live session", again, err)
	}
}
