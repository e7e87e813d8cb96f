package goredis

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
)

// TestGoRedisCallerNeverWaitsOnTheSocket_IdleSessionIsSentWithoutTheDrainer:
// a caller whose ctx can be cancelled and who finds its session idle sends
// its own commands: the round trip runs on the connection's worker with no
// batch of the engine's drainer on the wire; cancelled while the reply is
// held back, the caller returns at once, Uncertain, the round trip goes on
// and the session stays in use: the next command runs on it, and the left
// command ran.
func TestGoRedisCallerNeverWaitsOnTheSocket_IdleSessionIsSentWithoutTheDrainer(t *testing.T) {
	srv, p, client := private(t, true)
	e := newEngine(t, client)
	k1, k2 := key(t, "a"), key(t, "b")
	s, err := e.SessionForKey(ctxFor(t, 5*time.Second), k1)
	if err != nil {
		t.Fatal(err)
	}
	pc := proxied(t, p, s)
	pc.Stall(faultproxy.ToClient)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := e.Do(ctx, conn.AcquireOp(k1, "tokA", 10000), nil)
		done <- err
	}()
	if err := pc.WaitBuffered(ctxFor(t, 10*time.Second), faultproxy.ToClient, 1); err != nil {
		t.Fatal(err) // the server answered; the reply is held in the proxy
	}
	stacks := goroutines()
	if !strings.Contains(stacks, "goredis.(*gconn).DoOrLeave(") || strings.Contains(stacks, "conn.(*drainer).send(") {
		t.Fatalf("the round trip is not the caller's own (DoOrLeave), or a drainer batch is on the wire:\n%s", stacks)
	}
	cancel()
	err = <-done // returned with the reply still held back
	if conn.ClassOf(err) != conn.Uncertain || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v (%s), want uncertain, context.Canceled", err, classOf(err))
	}
	if s.Retired() {
		t.Fatal("a caller's cancellation retired the session")
	}
	pc.Unstall(faultproxy.ToClient)
	res, err := e.Do(ctxFor(t, 10*time.Second), conn.AcquireOp(k2, "tokB", 10000), nil)
	if err != nil || !res.Owned || res.Session != s {
		t.Fatalf("next command: %+v %v, want it owned on the same session", res, err)
	}
	if got := srv.MustExec(t, "GET", k1); got != "$4\r\ntokA\r\n" {
		t.Fatalf("the left command: GET = %q, want tokA", got)
	}
}

// TestGoRedisReturnsByTheDeadline_CloseEndsALeftRoundTrip: the engine's
// Close does not wait for a round trip whose caller left it (cancelled),
// though go-redis still reads its held-back reply: the session is retired
// and Close has returned while the connection's worker is still in
// go-redis (ReadTimeout one minute).
func TestGoRedisReturnsByTheDeadline_CloseEndsALeftRoundTrip(t *testing.T) {
	_, p, client := private(t, true, func(o *redis.Options) { o.ReadTimeout = time.Minute })
	e := newEngine(t, client)
	k := key(t, "a")
	s, err := e.SessionForKey(ctxFor(t, 5*time.Second), k)
	if err != nil {
		t.Fatal(err)
	}
	pc := proxied(t, p, s)
	pc.Stall(faultproxy.ToClient)
	t.Cleanup(func() { pc.Unstall(faultproxy.ToClient) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Do(ctx, conn.AcquireOp(k, "tokA", 10000), nil)
		done <- err
	}()
	if err := pc.WaitBuffered(ctxFor(t, 10*time.Second), faultproxy.ToClient, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; conn.ClassOf(err) != conn.Uncertain {
		t.Fatalf("cancelled caller: %v (%s), want uncertain", err, classOf(err))
	}
	e.Close()
	if stacks := goroutines(); !strings.Contains(stacks, "goredis.(*gconn).worker(") {
		t.Fatalf("go-redis no longer reads the held-back reply: the test proves nothing:\n%s", stacks)
	}
	if !s.Retired() {
		t.Fatal("the session outlived the engine's Close")
	}
}

// proxied returns the proxied connection of session s.
func proxied(t *testing.T, p *faultproxy.Proxy, s conn.Session) *faultproxy.Conn {
	t.Helper()
	id, ok := s.Identity()
	if !ok {
		t.Fatal("the session has no identity")
	}
	for _, c := range p.Conns() {
		if c.UpstreamLocalAddr() == id.Addr {
			return c
		}
	}
	t.Fatalf("no proxied connection is the session's (%s)", id.Addr)
	return nil
}

// goroutines is the stack of every goroutine.
func goroutines() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
