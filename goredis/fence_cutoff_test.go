//go:build !goredisadapter

package goredis

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
)

// TestGoRedisFenceCutsOffItsBatch_CallersGetUncertainOnceTheKillAnswered:
// an acquisition's SET ran, its reply is held on the way back (and so is
// the end of the socket the kill closes, behind it). Once the session's
// fence is answered the caller returns at once, Uncertain, long before the
// client's ReadTimeout (20 s here) ends the read; the SET ran once.
func TestGoRedisFenceCutsOffItsBatch_CallersGetUncertainOnceTheKillAnswered(t *testing.T) {
	srv, p, client := private(t, true, func(o *redis.Options) { o.ReadTimeout = 20 * time.Second })
	tr := newTransport(t, client)
	k := key(t, "k")
	s, err := tr.SessionForKey(ctxFor(t, 5*time.Second), k)
	if err != nil {
		t.Fatal(err)
	}
	srv.MustExec(t, "CONFIG", "RESETSTAT")
	session := p.Conns()[0] // the session's: the first connection through the proxy
	session.Stall(faultproxy.ToClient)
	defer session.Unstall(faultproxy.ToClient)
	done := make(chan error, 1)
	go func() {
		_, err := tr.Do(ctxFor(t, 30*time.Second), conn.AcquireOp(k, token(t), 10000), nil)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for calls(t, srv, "set") == "0" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polls the server for the SET: it ran, its reply is held
	}
	if err := tr.Fence(ctxFor(t, 5*time.Second), s); err != nil {
		t.Fatalf("Fence = %v", err)
	}
	select {
	case err := <-done:
		if conn.ClassOf(err) != conn.Uncertain || !errors.Is(err, errFencedInFlight) {
			t.Fatalf("the fenced acquisition = %v (%s); want uncertain, cut off by the fence", err, classOf(err))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the caller still waits for the fenced socket 5 s after the kill answered")
	}
	if n := calls(t, srv, "set"); n != "1" {
		t.Fatalf("SET ran %s times, want 1", n)
	}
}
