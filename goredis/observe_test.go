//go:build !goredisadapter

package goredis

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// eventLog records a transport's observer events as text, in order.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(format string, args ...any) {
	l.mu.Lock()
	l.events = append(l.events, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *eventLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// observer returns a conn.Observer writing to l; nodes are logged as "node"
// (the two transports' sessions reach the same server by one address).
func (l *eventLog) observer() *conn.Observer {
	return &conn.Observer{
		SessionOpened:  func(string) { l.add("opened") },
		SessionRetired: func(_ string, r conn.RetireReason) { l.add("retired %s", r) },
		FallbackTaken:  func(_ string, f conn.Fallback, first bool) { l.add("fallback %s first=%v", f, first) },
		Command:        func(_ context.Context, name string) { l.add("command %s", name) },
	}
}

// observedCalls runs the same calls on tr: an acquisition (the session
// opens), a renewal and a release (each through the server's fallback
// ladder, twice: the second time the session knows its capabilities),
// keep-alive renewals in one pipeline (not reported), a fenced acquisition
// (its script not cached: EVAL after NOSCRIPT), a fence, and RetireAll.
func observedCalls(t *testing.T, tr conn.Transport) {
	ctx := ctxFor(t, 10*time.Second)
	k, tok := "obs:k", "obs-token"
	for range 2 {
		if r, err := tr.Do(ctx, conn.AcquireOp(k, tok, 10000), nil); err != nil || !r.Owned {
			t.Fatalf("acquire: %+v %v", r, err)
		}
		if r, err := tr.Do(ctx, conn.ExtendOp(k, tok, 20000), nil); err != nil || !r.Owned {
			t.Fatalf("extend: %+v %v", r, err)
		}
		if r, err := tr.Do(ctx, conn.ReleaseOp(k, tok), nil); err != nil || !r.Owned {
			t.Fatalf("release: %+v %v", r, err)
		}
	}
	s, err := tr.SessionForKey(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	s.ExtendMany(ctx, []conn.ExtendRequest{{Key: k, Token: tok, TTLMillis: 1000}, {Key: k + "2", Token: tok, TTLMillis: 1000}})
	if r, err := tr.Do(ctx, conn.FencedAcquireOp("obs:{f}l", "obs:{f}c", tok, 10000), nil); err != nil || !r.Owned {
		t.Fatalf("fenced acquire: %+v %v", r, err)
	}
	if err := tr.Fence(ctx, s); err != nil {
		t.Fatalf("fence: %v", err)
	}
	if _, err := tr.Do(ctx, conn.OwnerOp(k), nil); err != nil {
		t.Fatal(err)
	}
	tr.RetireAll()
}

// TestGoRedisObserved_SameEventsAsPool: the same calls on conn.Pool and on
// the go-redis transport, each on a fresh sim node of each profile (their
// fallback ladders differ), report the same observer events in the same
// order.
func TestGoRedisObserved_SameEventsAsPool(t *testing.T) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			logs := map[string][]string{}
			for _, name := range []string{"rueidis", "goredis"} {
				srv, err := sim.Start(context.Background(), sim.Config{Profile: profile, Password: "pw"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = srv.Close() })
				var tr conn.Transport
				if name == "rueidis" {
					tr = rueidisPool(t, []string{srv.Addr()}, "pw")
				} else {
					tr = newTransport(t, goredisClient(t, srv.Addr(), "pw"))
				}
				var l eventLog
				tr.(interface{ SetObserver(*conn.Observer) }).SetObserver(l.observer())
				observedCalls(t, tr)
				logs[name] = l.list()
			}
			if !slices.Equal(logs["rueidis"], logs["goredis"]) {
				t.Fatalf("events differ:\nrueidis %q\ngoredis %q", logs["rueidis"], logs["goredis"])
			}
			for _, want := range []string{"opened", "retired fenced", "retired closed", "command CLIENT KILL", "command SET"} {
				if !slices.Contains(logs["goredis"], want) {
					t.Fatalf("no %q among %q", want, logs["goredis"])
				}
			}
		})
	}
}
