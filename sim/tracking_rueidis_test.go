package sim

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// TestRueidisClientSideCacheIsInvalidated: rueidis' client-side cache
// (CLIENT TRACKING ON OPTIN, CLIENT CACHING YES in a MULTI with PTTL)
// drops a cached key when another client changes it and when it expires
// on the server's clock with nobody reading it, on every profile.
func TestRueidisClientSideCacheIsInvalidated(t *testing.T) {
	for _, p := range Profiles {
		t.Run(string(p), func(t *testing.T) {
			clock := NewManualClock(testEpoch)
			s := startSim(t, Config{Profile: p, Clock: clock})
			c := newRueidis(t, rueidis.ClientOption{InitAddress: []string{s.Addr()}})
			ctx := context.Background()
			get := func() (string, bool) {
				r := c.DoCache(ctx, c.B().Get().Key("lock").Cache(), time.Minute)
				v, err := r.ToString()
				if err != nil && !rueidis.IsRedisNil(err) {
					t.Fatalf("GET lock: %v", err)
				}
				return v, r.IsCacheHit()
			}
			s.Exec("SET", "lock", "owner-1", "PX", "60000")
			if v, _ := get(); v != "owner-1" {
				t.Fatalf("GET lock = %q", v)
			}
			if _, hit := get(); !hit {
				t.Fatal("second GET was not served from the client-side cache")
			}
			s.Exec("SET", "lock", "owner-2", "PX", "60000")
			waitValue(t, get, "owner-2")
			clock.Advance(61 * time.Second) // expires on the server; rueidis' own TTL is a minute of real time
			waitValue(t, get, "")
		})
	}
}

// waitValue polls get (at most 5 s) until it returns want.
func waitValue(t *testing.T, get func() (string, bool), want string) {
	t.Helper()
	var v string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if v, _ = get(); v == want {
			return
		}
	}
	t.Fatalf("GET lock = %q after 5 s; want %q (invalidation not received)", v, want)
}
