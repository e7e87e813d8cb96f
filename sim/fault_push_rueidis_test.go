package sim

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// cachedGet returns a DoCache GET of key: its value and whether rueidis
// served it from its client-side cache.
func cachedGet(t *testing.T, c rueidis.Client, key string) func() (string, bool) {
	return func() (string, bool) {
		t.Helper()
		r := c.DoCache(context.Background(), c.B().Get().Key(key).Cache(), time.Minute)
		v, err := r.ToString()
		if err != nil && !rueidis.IsRedisNil(err) {
			t.Fatalf("GET %s: %v", key, err)
		}
		return v, r.IsCacheHit()
	}
}

// cacheTwo starts a node and a rueidis client on one connection
// (PipelineMultiplex -1: pushes and replies of one stream, in order) that
// caches k1 and k2 (both "old").
func cacheTwo(t *testing.T) (s *Server, c rueidis.Client, k1, k2 func() (string, bool)) {
	s = startSim(t, Config{})
	c = newRueidis(t, rueidis.ClientOption{InitAddress: []string{s.Addr()}, PipelineMultiplex: -1})
	s.Exec("SET", "k1", "old")
	s.Exec("SET", "k2", "old")
	k1, k2 = cachedGet(t, c, "k1"), cachedGet(t, c, "k2")
	k1()
	k2()
	if _, hit := k1(); !hit {
		t.Fatal("k1 is not cached")
	}
	for _, e := range s.Log() {
		if e.ClientID != s.Log()[0].ClientID {
			t.Fatalf("rueidis opened a second connection (%+v): the ordering this test relies on is lost", e)
		}
	}
	return s, c, k1, k2
}

// staleHit fails unless get is still served "old" from the cache.
func staleHit(t *testing.T, get func() (string, bool), what string) {
	t.Helper()
	if v, hit := get(); v != "old" || !hit {
		t.Fatalf("%s: GET k1 = %q (cache hit %v); want the stale cached \"old\"", what, v, hit)
	}
}

// TestRueidisDroppedPushNeverArrives: with k1's invalidation dropped,
// rueidis keeps serving k1's old value from its cache while k2's
// invalidation, sent after it on the same connection, arrives.
func TestRueidisDroppedPushNeverArrives(t *testing.T) {
	s, _, k1, k2 := cacheTwo(t)
	fired := make(chan FaultRecord, 1)
	s.Inject(Fault{Kind: DropPush, Key: "k1", Fired: fired})
	s.Exec("SET", "k1", "new")
	s.Exec("SET", "k2", "new")
	<-fired
	waitValue(t, k2, "new") // k1's push would have come before this one
	staleHit(t, k1, "k1's invalidation dropped")
}

// TestRueidisDelayedPushArrivesAfterGate: k1's delayed invalidation (and
// k2's, behind it) has not arrived when a PING on the same connection
// returns; once the gate closes, rueidis drops both from its cache.
func TestRueidisDelayedPushArrivesAfterGate(t *testing.T) {
	s, c, k1, k2 := cacheTwo(t)
	gate, fired := make(chan struct{}), make(chan FaultRecord, 1)
	s.Inject(Fault{Kind: DelayPush, Key: "k1", Gate: gate, Fired: fired})
	s.Exec("SET", "k1", "new")
	s.Exec("SET", "k2", "new")
	<-fired
	if err := c.Do(context.Background(), c.B().Ping().Build()).Error(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	staleHit(t, k1, "k1's invalidation held")
	if v, hit := k2(); v != "old" || !hit {
		t.Fatalf("GET k2 = %q (hit %v); want \"old\": its invalidation waits behind k1's", v, hit)
	}
	close(gate)
	waitValue(t, k1, "new")
	waitValue(t, k2, "new")
}
