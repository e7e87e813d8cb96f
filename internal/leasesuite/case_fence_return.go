package leasesuite

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
)

// TestFenceBeforeReturn_AnUncertainReleaseReturnsOnlyOnceItsSocketIsKilled:
// the client→server direction of the socket that carries a lock's delete
// stalls (a proxy holds its bytes); Release with a 300ms ctx returns its
// unknown outcome only once the fence of that socket answered — the fence
// travels on a connection that never carried the lock, so the stall does
// not hold it up, and the caller's deadline does not cut it short. When
// Release returns, the server has killed the socket: once the proxy lets
// the held bytes through, the delete never runs, and the lock's token is
// still the key's (until it expires).
func caseFenceBeforeReturn_AnUncertainReleaseReturnsOnlyOnceItsSocketIsKilled(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		loadScripts(f.target)
		locks := f.locks(t, lease.WithIdleCheck(time.Hour)) // no liveness PING ahead of the delete
		lock, err := locks.Acquire(ctxT(t), "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		token := wireOf(lock.Token())
		before := kills(f.target)
		session := f.sessionConn(t, lock)
		session.Stall(faultproxy.ToServer)
		out, err := lock.Release(ctxFor(t, 300*time.Millisecond))
		killed := kills(f.target) > before // read at once: the kill must have run before Release returned
		if out != lease.ReleaseUnknown || !errors.Is(err, conn.ErrOutcomeUnknown) || errors.Is(err, lease.ErrFencePending) {
			t.Fatalf("Release = %v, %v; want ReleaseUnknown, the outcome unknown, fenced (not pending)", out, err)
		}
		if !killed {
			t.Fatal("Release returned before the fence (CLIENT KILL) of its socket ran on the server")
		}
		if st := lock.State(); st != lease.StateLost {
			t.Fatalf("state %v when Release returned; want Lost (the fence answered)", st)
		}
		if err := session.WaitBuffered(ctxT(t), faultproxy.ToServer, 1); err != nil {
			t.Fatalf("the delete never left the client: %v", err)
		}
		session.Unstall(faultproxy.Both) // the held delete reaches a killed connection
		leaseinternal.Driver(locks).WaitIdle()
		time.Sleep(100 * time.Millisecond) // a negative check: the delete must never run
		if n := deletesOf(f.target, token); n != 0 {
			t.Fatalf("%d deletes of the token ran after Release returned; want none", n)
		}
		if got := f.srv.Exec("GET", "k"); !strings.Contains(got, token) {
			t.Fatalf("GET k = %q; want the lock's token still there (the delete never ran)", got)
		}
	})
}

// TestClientClosed_EveryCallFailsAtOnceNamingTheClientAndSendsNothing: once
// the user's client is closed, every call of a Locks that already has its
// connections — an acquisition, a semaphore's permit, a release — fails at
// once with an error matching ErrClientClosed, before anything is sent, and
// a held lock's keep-alive ends with a cause that names the client the
// Locks runs on (never another one's).
func caseClientClosed_EveryCallFailsAtOnceNamingTheClientAndSendsNothing(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks, closeClient := tr.Locks(t, clientOf([]string{tg.srv.Addr()}, "", tg.password, false))
		ctx := ctxT(t)
		held, err := locks.Acquire(ctx, "held", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		closeClient()
		// A client that can only be asked (rueidis) is probed at most every
		// 10 ms: wait until a call was refused for the close, however slow
		// the machine, rather than sleeping a margin.
		eventually(t, "a call refused with ErrClientClosed", func() bool {
			_, err := locks.TryAcquire(ctx, "probe", 10*time.Second)
			return errors.Is(err, lease.ErrClientClosed)
		})
		tg.srv.ResetLog()
		start := time.Now()
		_, tryErr := locks.TryAcquire(ctx, "other", 10*time.Second)
		_, semErr := locks.Semaphore("sem", 3).TryAcquire(ctx, 10*time.Second)
		_, relErr := held.Release(ctx)
		took := time.Since(start)
		for name, err := range map[string]error{"TryAcquire": tryErr, "Semaphore.TryAcquire": semErr, "Release": relErr} {
			if !errors.Is(err, lease.ErrClientClosed) || !errors.Is(err, lease.ErrNotSubmitted) {
				t.Errorf("%s after the client was closed = %v; want ErrClientClosed, not sent", name, err)
			}
			assertNamesClient(t, name, err, tr.Name)
		}
		if took > time.Second {
			t.Errorf("the three calls took %v; want them refused at once", took)
		}
		if got := lockCommands(tg.srv.Log()); len(got) != 0 {
			t.Errorf("the calls after the close sent %v; want nothing", got)
		}
		if held.State() != lease.StateHeld {
			t.Errorf("state %v after a release that was not sent; want Held", held.State())
		}
	})
}

// clientNames is the name each transport's client reports (conn.Client.Name).
var clientNames = map[string]string{"wire": "wire", "rueidis": "rueidis", "goredis": "go-redis", "valkeygo": "valkey-go"}

// assertNamesClient fails t unless err's text says that the transport's
// own client was closed, and names no other client.
func assertNamesClient(t *testing.T, what string, err error, transport string) {
	t.Helper()
	if err == nil {
		return // reported by the caller
	}
	msg, own := err.Error(), clientNames[transport]
	if own != "" && !strings.Contains(msg, "the "+own+" client was closed") {
		t.Errorf("%s on %s: %q does not say that the %s client was closed", what, transport, msg, own)
	}
	for _, other := range clientNames {
		if other != own && strings.Contains(msg, other+" client") {
			t.Errorf("%s on %s: %q names the %s client", what, transport, msg, other)
		}
	}
}

func init() {
	register(
		Case{"FenceBeforeReturn_AnUncertainReleaseReturnsOnlyOnceItsSocketIsKilled", caseFenceBeforeReturn_AnUncertainReleaseReturnsOnlyOnceItsSocketIsKilled},
		Case{"ClientClosed_EveryCallFailsAtOnceNamingTheClientAndSendsNothing", caseClientClosed_EveryCallFailsAtOnceNamingTheClientAndSendsNothing},
	)
}
