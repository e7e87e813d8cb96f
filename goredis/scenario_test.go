package goredis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/internal/realserver"
)

// The go-redis scenarios of the transport reference, over real sockets to
// private redis-servers (realserver.StartPrivate), as regression tests: a
// change in go-redis' sticky pool, retry or hook rules that weakens a
// guarantee fails here.

// private starts a private redis-server and a user client on it (through
// proxy when not nil).
func private(t *testing.T, viaProxy bool, tweak ...func(*redis.Options)) (*realserver.Private, *faultproxy.Proxy, *redis.Client) {
	t.Helper()
	srv := realserver.StartPrivate(t)
	addr := srv.Addr
	var p *faultproxy.Proxy
	if viaProxy {
		var err error
		if p, err = faultproxy.Start(srv.Addr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		addr = p.Addr()
	}
	return srv, p, goredisClient(t, addr, srv.Password, tweak...)
}

// calls returns how often srv ran command name since the last CONFIG
// RESETSTAT.
func calls(t *testing.T, srv *realserver.Private, name string) string {
	t.Helper()
	info := srv.MustExec(t, "INFO", "commandstats")
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "cmdstat_"+name+":calls="); ok {
			n, _, _ := strings.Cut(v, ",")
			return n
		}
	}
	return "0"
}

// TestGoRedisRetriesOff_DroppedReplyIsNotResent: the user's client keeps
// go-redis' default MaxRetries (3), which re-sends a command whose reply
// was lost; the adapter's SET, whose reply the proxy drops before closing
// the connection, fails with an error that is not ErrNotWritten, and ran
// exactly once.
func TestGoRedisRetriesOff_DroppedReplyIsNotResent(t *testing.T) {
	srv, p, client := private(t, true) // MaxRetries 0: go-redis' default of 3
	cn := dial(t, newAdapter(t, client), p.Addr())
	k := key(t, "k")
	if _, err := do(ctxFor(t, 5*time.Second), cn, "GET", k); err != nil {
		t.Fatal(err)
	}
	srv.MustExec(t, "CONFIG", "RESETSTAT")
	session := p.Conns()[0]
	session.BlackHole(faultproxy.ToClient)
	done := make(chan error, 1)
	go func() {
		_, err := do(ctxFor(t, 10*time.Second), cn, "SET", k, token(t), "NX", "PX", "10000")
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for calls(t, srv, "set") == "0" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	session.Close()
	if err := <-done; err == nil || errors.Is(err, conn.ErrNotWritten) {
		t.Fatalf("lost reply: %v, want an error that is not ErrNotWritten", err)
	}
	time.Sleep(100 * time.Millisecond) // a retry would be on its way by now
	if n := calls(t, srv, "set"); n != "1" {
		t.Fatalf("SET ran %s times, want 1", n)
	}
}

// TestGoRedisCallerNeverWaitsOnTheSocket_FrozenServer: on a frozen server
// (SIGSTOP) a caller whose ctx ends returns at once, Uncertain once its
// command was handed off; a caller queued behind it returns at its own
// deadline, not submitted (never taken); after SIGCONT the transport
// closes, and the first command ran.
func TestGoRedisCallerNeverWaitsOnTheSocket_FrozenServer(t *testing.T) {
	srv, _, client := private(t, false, func(o *redis.Options) { o.ReadTimeout = 3 * time.Second })
	e := newEngine(t, client)
	k1, k2 := key(t, "a"), key(t, "b")
	if _, err := e.SessionForKey(ctxFor(t, 5*time.Second), k1); err != nil {
		t.Fatal(err)
	}
	freeze(t, srv)
	first := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := e.Do(ctx, conn.AcquireOp(k1, "tokA", 10000), nil)
		first <- err
	}()
	time.Sleep(50 * time.Millisecond) // the first batch is on the wire
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := e.Do(ctx, conn.AcquireOp(k2, "tokB", 10000), nil)
	if conn.ClassOf(err) != conn.NotSubmitted || time.Since(start) > time.Second {
		t.Fatalf("queued caller: %v (%s) after %v, want not submitted at its deadline", err, classOf(err), time.Since(start))
	}
	if err := <-first; conn.ClassOf(err) != conn.Uncertain {
		t.Fatalf("first caller: %v (%s), want uncertain", err, classOf(err))
	}
	thaw(t, srv)
	e.Close()
	if got := srv.MustExec(t, "GET", k1); got != "$4\r\ntokA\r\n" {
		t.Fatalf("first command after resume: GET = %q", got)
	}
	if got := srv.MustExec(t, "EXISTS", k2); got != ":0\r\n" {
		t.Fatalf("the queued command ran: EXISTS = %q", got)
	}
}

// TestGoRedisNoForeignReply_LateReplyStaysWithItsCaller: a caller that
// gave up on a frozen server never lets its late reply reach the next
// caller of the session (go-redis alone would hand it over with a nil
// error): the second caller reads its own key's owner.
func TestGoRedisNoForeignReply_LateReplyStaysWithItsCaller(t *testing.T) {
	srv, _, client := private(t, false, func(o *redis.Options) { o.ReadTimeout = 3 * time.Second })
	e := newEngine(t, client)
	k1, k2 := key(t, "a"), key(t, "b")
	srv.MustExec(t, "SET", k2, "tokB")
	if _, err := e.SessionForKey(ctxFor(t, 5*time.Second), k1); err != nil {
		t.Fatal(err)
	}
	freeze(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := e.Do(ctx, conn.OwnerOp(k1), nil); conn.ClassOf(err) != conn.Uncertain {
		t.Fatalf("first: %v", err)
	}
	second := make(chan conn.Result, 1)
	go func() {
		res, err := e.Do(ctxFor(t, 10*time.Second), conn.OwnerOp(k2), nil)
		if err != nil {
			t.Errorf("second: %v", err)
		}
		second <- res
	}()
	time.Sleep(50 * time.Millisecond)
	thaw(t, srv)
	if res := <-second; !res.Owned || res.Token != "tokB" {
		t.Fatalf("second caller got %+v, want its own key's owner tokB", res)
	}
}

// freeze stops srv (SIGSTOP); it is resumed at test end at the latest.
func freeze(t *testing.T, srv *realserver.Private) {
	t.Helper()
	if err := syscall.Kill(srv.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(srv.Pid(), syscall.SIGCONT) })
}

func thaw(t *testing.T, srv *realserver.Private) {
	t.Helper()
	if err := syscall.Kill(srv.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// TestGoRedisDeadSessionIsSkipped_KilledWhileIdle: a session whose socket
// the server closed while idle is found dead by the idle PING before the
// command is written; the command goes to a fresh session and succeeds.
func TestGoRedisDeadSessionIsSkipped_KilledWhileIdle(t *testing.T) {
	srv, _, client := private(t, false)
	e := idleEngine(t, client, 0)
	k := key(t, "k")
	s, err := e.SessionForKey(ctxFor(t, 5*time.Second), k)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.Identity()
	srv.MustExec(t, "CLIENT", "KILL", "ID", itoa(id.ID))
	res, err := e.Do(ctxFor(t, 5*time.Second), conn.AcquireOp(k, "tok", 10000), nil)
	if err != nil || !res.Owned || res.Session == s {
		t.Fatalf("after an idle kill: %+v %v", res, err)
	}
	if !s.Retired() {
		t.Fatal("dead session not retired")
	}
}

// TestGoRedisClientChecked_RefusedBeforeSending: New refuses, before
// anything is sent, a client whose I/O may have no deadline (ReadTimeout
// -1 without ContextTimeoutEnabled, -2 with it, a WriteBufferSize too
// small for the write witness), a Ring and a ClusterClient that does not
// learn its slots from the cluster; it takes -1 with ContextTimeoutEnabled.
func TestGoRedisClientChecked_RefusedBeforeSending(t *testing.T) {
	refused := map[string]*redis.Options{
		"read -1":        {ReadTimeout: -1},
		"write -1":       {WriteTimeout: -1},
		"read -2 ctx":    {ReadTimeout: -2, ContextTimeoutEnabled: true},
		"write buffer 8": {WriteBufferSize: 8},
	}
	for name, o := range refused {
		o.Addr = "127.0.0.1:1"
		c := redis.NewClient(o)
		if _, err := New(c); !errors.Is(err, ErrUnboundedIO) {
			t.Errorf("%s: %v, want ErrUnboundedIO", name, err)
		}
		_ = c.Close()
	}
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ReadTimeout: -2, ContextTimeoutEnabled: true})
	defer cluster.Close()
	if _, err := New(cluster); !errors.Is(err, ErrUnboundedIO) {
		t.Errorf("cluster read -2: %v, want ErrUnboundedIO", err)
	}
	ok := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: -1, WriteTimeout: -1, ContextTimeoutEnabled: true})
	defer ok.Close()
	if locks, err := New(ok); err != nil {
		t.Errorf("-1 with ctx deadlines: %v", err)
	} else {
		locks.Close()
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if _, err := New(ring); !errors.Is(err, ErrUnsupportedClient) {
		t.Errorf("ring: %v", err)
	}
	manual := redis.NewClusterClient(&redis.ClusterOptions{ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
		return nil, nil
	}})
	defer manual.Close()
	if _, err := New(manual); !errors.Is(err, ErrUnsupportedClient) {
		t.Errorf("ClusterSlots: %v", err)
	}
}

// TestGoRedisClientChecked_DialFailureIsNotSubmitted: a client that cannot
// connect fails Dial, and a connection's first round trip (go-redis dials
// on first use) with ErrNotWritten; the engine's command is not submitted.
func TestGoRedisClientChecked_DialFailureIsNotSubmitted(t *testing.T) {
	client := goredisClient(t, "127.0.0.1:1", "", func(o *redis.Options) { o.DialTimeout = time.Second })
	c := newAdapter(t, client)
	if cn, err := c.Dial(ctxFor(t, 5*time.Second), "127.0.0.1:1"); err == nil {
		cn.Close()
		t.Fatal("Dial of a server that does not answer succeeded")
	}
	cn := undialled(t, c)
	if _, err := do(ctxFor(t, 5*time.Second), cn, "PING"); !errors.Is(err, conn.ErrNotWritten) {
		t.Fatalf("dial failure: %v, want ErrNotWritten", err)
	}
	if cn.Err() == nil {
		t.Fatal("a connection that failed to dial is not broken: go-redis would dial again")
	}
	e := newEngine(t, client)
	_, err := e.Do(ctxFor(t, 5*time.Second), conn.AcquireOp("k", "tok", 1000), nil)
	if conn.ClassOf(err) != conn.NotSubmitted {
		t.Fatalf("dial failure: %v (%s)", err, classOf(err))
	}
}

// TestGoRedisNoForeignReply_ConcurrentCallersGetTheirOwn: 64 callers
// sharing one session, each reading its own key's owner many times, each
// always read its own token (batches of many callers answer each one with
// its own replies, also while the next batch is on the wire).
func TestGoRedisNoForeignReply_ConcurrentCallersGetTheirOwn(t *testing.T) {
	srv, _, client := private(t, false)
	e := newEngine(t, client)
	const callers, rounds = 64, 200
	for i := range callers {
		srv.MustExec(t, "SET", "own:"+itoa(int64(i)), "tok"+itoa(int64(i)))
	}
	errs := make(chan error, callers)
	for i := range callers {
		go func() {
			k, want := "own:"+itoa(int64(i)), "tok"+itoa(int64(i))
			for range rounds {
				res, err := e.Do(context.Background(), conn.OwnerOp(k), nil)
				if err != nil || res.Token != want {
					errs <- fmt.Errorf("caller %d read %q (%v), want %q", i, res.Token, err, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
