package sim

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTrackingActiveExpiry: a tracked key that expires with nobody reading
// it is invalidated by the server's active expiry (every 10 ms of real
// time, on the manual clock), for default and BCAST trackers alike.
func TestTrackingActiveExpiry(t *testing.T) {
	clock := NewManualClock(testEpoch)
	forEachProfile(t, Config{Clock: clock}, func(t *testing.T, sc *scenario) {
		a := sc.conn("a", 3)
		bc := sc.conn("bc", 3)
		sc.conn("b", 2)
		sc.step("a: CLIENT TRACKING ON", ok)
		sc.step("bc: CLIENT TRACKING ON BCAST PREFIX ke", ok)
		sc.step("b: SET ke v PX 700", ok)
		sc.step("bc: sync", inv("ke"))
		sc.step("a: GET ke", "$1\r\nv\r\n")
		clock.Advance(700 * time.Millisecond)
		sc.step("a: sync", "") // not expired yet: expiry is strictly after the TTL
		clock.Advance(time.Millisecond)
		if got := a.read(); got != inv("ke") { // written by the expiry loop, unprompted
			t.Fatalf("active expiry sent %q", got)
		}
		if got := bc.read(); got != inv("ke") {
			t.Fatalf("BCAST tracker got %q", got)
		}
		if got := sc.s.Exec("DBSIZE"); got != ":0\r\n" {
			t.Fatalf("DBSIZE after active expiry = %q", got)
		}
	})
}

// TestTrackingLazyExpiry: with the expiry loop off, a command that finds
// a tracked key expired invalidates it: another client's read or write
// right away, the tracking client's own read after its reply (and the
// read tracks the key again); NOLOOP hides the own case.
func TestTrackingLazyExpiry(t *testing.T) {
	clock := NewManualClock(testEpoch)
	forEachProfile(t, Config{Clock: clock, ExpireEvery: -1}, func(t *testing.T, sc *scenario) {
		sc.conn("a", 3)
		sc.conn("b", 2)
		sc.step("a: CLIENT TRACKING ON", ok)
		sc.step("b: SET kl v PX 300", ok)
		sc.step("a: GET kl", "$1\r\nv\r\n")
		clock.Advance(301 * time.Millisecond)
		sc.step("a: sync", "")
		sc.step("b: EXISTS kl", ":0\r\n")
		sc.step("a: sync", inv("kl"))
		sc.step("b: SET kl v PX 300", ok)
		sc.step("a: GET kl", "$1\r\nv\r\n")
		clock.Advance(301 * time.Millisecond)
		sc.step("a: GET kl", "_\r\n"+inv("kl"))
		sc.step("b: SET kl v2 PX 300", ok) // the GET tracked kl again
		sc.step("a: sync", inv("kl"))
		sc.step("a: CLIENT TRACKING ON NOLOOP", ok)
		sc.step("a: GET kl", "$2\r\nv2\r\n")
		clock.Advance(301 * time.Millisecond)
		sc.step("a: GET kl", "_\r\n")
		sc.step("b: SET kx v PX 300", ok)
		sc.step("a: GET kx", "$1\r\nv\r\n")
		clock.Advance(301 * time.Millisecond)
		sc.step("b: DEL kx", ":0\r\n")
		sc.step("a: sync", inv("kx"))
		sc.s.Engine().ExpireDue() // nothing left to expire, nothing to send
		sc.step("a: sync", "")
	})
}

// TestTrackingFlushSendsNull: FLUSHALL and FLUSHDB send every tracking
// client a null key list, BCAST and NOLOOP ones and the flusher included
// (after its reply); RESP2 clients without REDIRECT get nothing.
func TestTrackingFlushSendsNull(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		sc.conn("a", 3)
		sc.conn("bc", 3)
		sc.conn("r2", 2)
		sc.step("a: CLIENT TRACKING ON NOLOOP", ok)
		sc.step("bc: CLIENT TRACKING ON BCAST PREFIX p", ok)
		sc.step("r2: CLIENT TRACKING ON", ok)
		sc.step("a: FLUSHALL", ok+invAll)
		sc.step("bc: sync", invAll)
		sc.step("r2: FLUSHDB", ok)
		sc.step("a: sync", invAll)
		sc.step("bc: sync", invAll)
		sc.step("r2: sync", "")
	})
}

// TestTrackingCommandErrors: CLIENT TRACKING/CACHING/TRACKINGINFO/GETREDIR
// replies, recorded from redis 7.0.15 (the same on every profile).
func TestTrackingCommandErrors(t *testing.T) {
	const (
		bcastSwitch = "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.\r\n"
		optSwitch   = "-ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.\r\n"
		noRedirect  = "-ERR The client ID you want redirect to does not exist\r\n"
	)
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		sc.conn("a", 2)
		for _, c := range [][2]string{
			{"CLIENT TRACKING", "-ERR wrong number of arguments for 'client|tracking' command\r\n"},
			{"CLIENT TRACKING MAYBE", syntaxErr}, {"CLIENT TRACKING ON FOO", syntaxErr},
			{"CLIENT TRACKING ON REDIRECT", syntaxErr}, {"CLIENT TRACKING ON PREFIX", syntaxErr},
			{"CLIENT TRACKING ON REDIRECT abc", "-ERR value is not an integer or out of range\r\n"},
			{"CLIENT TRACKING ON REDIRECT 0", noRedirect}, {"CLIENT TRACKING OFF REDIRECT 999", noRedirect},
			{"CLIENT TRACKING ON REDIRECT $a REDIRECT 1", "-ERR A client can only redirect to a single other client\r\n"},
			{"CLIENT TRACKING ON PREFIX x OPTIN OPTOUT", "-ERR PREFIX option requires BCAST mode to be enabled\r\n"},
			{"CLIENT TRACKING ON BCAST OPTIN OPTOUT", "-ERR OPTIN and OPTOUT are not compatible with BCAST\r\n"},
			{"CLIENT TRACKING ON OPTIN OPTOUT", "-ERR You can't specify both OPTIN mode and OPTOUT mode\r\n"},
			{"CLIENT TRACKING OFF PREFIX x", ok}, {"CLIENT GETREDIR", ":-1\r\n"},
			{"CLIENT CACHING YES", "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled\r\n"},
			{"CLIENT TRACKINGINFO", "*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0\r\n"},
			{"CLIENT TRACKING ON", ok}, {"CLIENT GETREDIR", ":0\r\n"},
			{"CLIENT CACHING YES", "-ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.\r\n"},
			{"CLIENT CACHING MAYBE", syntaxErr},
			{"CLIENT CACHING YES NO", "-ERR wrong number of arguments for 'client|caching' command\r\n"},
			{"CLIENT TRACKING ON BCAST", bcastSwitch}, {"CLIENT TRACKING ON OPTIN NOLOOP", ok},
			{"CLIENT TRACKING ON OPTOUT", optSwitch}, {"CLIENT TRACKING ON BCAST OPTOUT", bcastSwitch},
			{"CLIENT CACHING NO", "-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.\r\n"},
			{"CLIENT CACHING yes", ok},
			{"CLIENT TRACKINGINFO", "*6\r\n$5\r\nflags\r\n*4\r\n$2\r\non\r\n$5\r\noptin\r\n$11\r\ncaching-yes\r\n$6\r\nnoloop\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n"},
			{"CLIENT TRACKING OFF", ok}, {"CLIENT TRACKING ON OPTOUT REDIRECT $a", ok}, {"CLIENT CACHING no", ok},
			{"CLIENT TRACKINGINFO", "*6\r\n$5\r\nflags\r\n*3\r\n$2\r\non\r\n$6\r\noptout\r\n$10\r\ncaching-no\r\n$8\r\nredirect\r\n:" + sc.ids["a"] + "\r\n$8\r\nprefixes\r\n*0\r\n"},
			{"CLIENT GETREDIR", ":" + sc.ids["a"] + "\r\n"},
			{"CLIENT TRACKING OFF", ok}, {"CLIENT TRACKING ON BCAST PREFIX x PREFIX x", "-ERR Prefix 'x' overlaps with another provided prefix 'x'. Prefixes for a single client must not overlap.\r\n"},
			{"CLIENT TRACKING ON BCAST", ok},
			{"CLIENT TRACKING ON BCAST PREFIX x", "-ERR Prefix 'x' overlaps with an existing prefix ''. Prefixes for a single client must not overlap.\r\n"},
		} {
			sc.step("a: "+c[0], c[1])
		}
		if info := sc.s.Exec("CLIENT", "LIST"); !strings.Contains(info, " flags=tB ") || !strings.Contains(info, " redir=0 ") {
			t.Fatalf("CLIENT LIST of a BCAST tracker: %q", info)
		}
	})
}

// TestTrackingNOPERM: a user without client|tracking or client|caching
// gets the profile's NOPERM text (Redis 7.0 words it differently from the others).
func TestTrackingNOPERM(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		sc.s.SetUser("nt", "pw", "get", "client|id")
		sc.s.SetUser("nc", "pw", "get", "client|tracking")
		sc.conn("nt", 3)
		sc.conn("nc", 3)
		sc.step("nt: AUTH nt pw", ok)
		sc.step("nc: AUTH nc pw", ok)
		text := func(user, perm string) string {
			if sc.s.Profile() == Redis70 {
				return "-NOPERM this user has no permissions to run the '" + perm + "' command\r\n"
			}
			return "-NOPERM User " + user + " has no permissions to run the '" + perm + "' command\r\n"
		}
		sc.step("nt: CLIENT TRACKING ON", text("nt", "client|tracking"))
		sc.step("nc: CLIENT TRACKING ON OPTIN", ok)
		sc.step("nc: CLIENT CACHING YES", text("nc", "client|caching"))
	})
}

// TestEngineTrackingInProcess: the deterministic simulator's view: Exec
// returns replies only; invalidations wait in per-client queues for
// TakePushes; ExpireDue expires on the engine's clock; the same inputs
// give the same queues.
func TestEngineTrackingInProcess(t *testing.T) {
	run := func() [][]byte {
		clock := NewManualClock(testEpoch)
		e := NewEngine(Config{Profile: Valkey90, Clock: clock})
		a, b, bc := e.NewClient("10.0.0.1:1"), e.NewClient("10.0.0.2:1"), e.NewClient("10.0.0.3:1")
		ex := func(id int64, args ...string) string {
			bs := make([][]byte, len(args))
			for i, s := range args {
				bs[i] = []byte(s)
			}
			return string(e.Exec(id, bs...))
		}
		ex(a, "HELLO", "3")
		ex(bc, "HELLO", "3")
		ex(a, "CLIENT", "TRACKING", "ON")
		ex(bc, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "lock:")
		ex(b, "SET", "lock:1", "x", "PX", "1000")
		ex(b, "SET", "lock:2", "x", "PX", "2000")
		ex(a, "GET", "lock:1")
		ex(a, "GET", "lock:2")
		if got := ex(a, "SET", "lock:2", "mine", "KEEPTTL"); got != ok {
			t.Fatalf("own SET = %q: pushes must not be in Exec's reply", got)
		}
		if ids := e.PushTargets(); !slices.Equal(ids, []int64{a, bc}) {
			t.Fatalf("PushTargets = %v; want [%d %d]", ids, a, bc)
		}
		if got := e.TakePushes(b); got != nil {
			t.Fatalf("RESP2 client without REDIRECT got %q", got)
		}
		clock.Advance(1500 * time.Millisecond)
		e.ExpireDue()
		out := append(e.TakePushes(a), []byte("--"))
		out = append(out, e.TakePushes(bc)...)
		if e.TakePushes(a) != nil || len(e.PushTargets()) != 0 {
			t.Fatal("TakePushes did not empty the queues")
		}
		return out
	}
	got := run()
	want := []string{inv("lock:2"), inv("lock:1"), "--", inv("lock:1"), inv("lock:2"), inv("lock:2"), inv("lock:1")}
	if len(got) != len(want) {
		t.Fatalf("pushes %q; want %q", got, want)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Fatalf("push %d = %q; want %q (all: %q)", i, got[i], want[i], got)
		}
	}
	if again := run(); !slices.EqualFunc(got, again, func(x, y []byte) bool { return string(x) == string(y) }) {
		t.Fatalf("not deterministic: %q then %q", got, again)
	}
}

// TestPubSubBasics: SUBSCRIBE/UNSUBSCRIBE/PUBLISH replies in both
// protocols (recorded from redis 7.0.15).
func TestPubSubBasics(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		sc.conn("s2", 2)
		sc.conn("s3", 3)
		sc.conn("p", 2)
		sc.step("s2: UNSUBSCRIBE", "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n")
		sc.step("s3: UNSUBSCRIBE", ">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n")
		sc.step("s2: SUBSCRIBE ch other", "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$5\r\nother\r\n:2\r\n")
		sc.step("s3: SUBSCRIBE ch", ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n")
		sc.step("p: PUBLISH ch hello", ":2\r\n")
		sc.step("s2: sync", "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n")
		sc.step("s3: sync", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n")
		sc.step("s2: PING hi", "*2\r\n$4\r\npong\r\n$2\r\nhi\r\n")
		sc.step("s2: CLIENT ID", "-ERR Can't execute 'client|id': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n")
		sc.step("s3: GET k", "_\r\n")
		sc.step("s2: UNSUBSCRIBE ch nope", "*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:1\r\n*3\r\n$11\r\nunsubscribe\r\n$4\r\nnope\r\n:1\r\n")
		sc.step("s2: UNSUBSCRIBE", "*3\r\n$11\r\nunsubscribe\r\n$5\r\nother\r\n:0\r\n")
		sc.step("s2: GET k", "$-1\r\n")
	})
}
