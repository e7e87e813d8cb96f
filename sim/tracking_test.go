package sim

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Unit tests of CLIENT TRACKING over real sockets, reading raw bytes. The
// expected bytes are those recorded from the real servers and from the
// real redis 7.0.15 (see differential_tracking_test.go); every profile gives the same
// bytes except the NOPERM text.

// inv is a RESP3 invalidation push of keys (BCAST lists several).
func inv(keys ...string) string {
	return ">2\r\n$10\r\ninvalidate\r\n" + keyArray(keys)
}

// invMsg is the RESP2 __redis__:invalidate message of keys.
func invMsg(keys ...string) string {
	return "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n" + keyArray(keys)
}

func keyArray(keys []string) string {
	s := fmt.Sprintf("*%d\r\n", len(keys))
	for _, k := range keys {
		s += fmt.Sprintf("$%d\r\n%s\r\n", len(k), k)
	}
	return s
}

const (
	invAll   = ">2\r\n$10\r\ninvalidate\r\n_\r\n"
	pong     = "+PONG\r\n"
	pongSub  = "*2\r\n$4\r\npong\r\n$0\r\n\r\n" // PING on a subscribed RESP2 connection
	subInval = "*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n"
)

// sync sends PING and returns everything the connection received before
// the PONG: exactly what was queued for it before PING ran, on the
// simulator as on real servers (no timing involved).
func (w *wire) sync() string {
	w.t.Helper()
	w.send("PING")
	var out strings.Builder
	for {
		m := w.read()
		if m == pong || m == pongSub {
			return out.String()
		}
		out.WriteString(m)
	}
}

// readN reads n whole messages (replies or pushes) and returns them joined.
func (w *wire) readN(n int) string {
	w.t.Helper()
	var out strings.Builder
	for range n {
		out.WriteString(w.read())
	}
	return out.String()
}

// scenario runs tracking steps on named connections of one server.
type scenario struct {
	t     *testing.T
	s     *Server
	conns map[string]*wire
	ids   map[string]string
}

func newScenario(t *testing.T, s *Server) *scenario {
	return &scenario{t: t, s: s, conns: map[string]*wire{}, ids: map[string]string{}}
}

// conn opens a connection speaking RESP proto (2 or 3).
func (sc *scenario) conn(name string, proto int) *wire {
	sc.t.Helper()
	w := dial(sc.t, sc.s.Addr())
	if proto == 3 {
		w.do("HELLO", "3")
	}
	sc.conns[name] = w
	sc.ids[name] = strings.Trim(w.do("CLIENT", "ID"), ":\r\n")
	return w
}

// step is "conn: COMMAND args" (args split on spaces; $name is that
// connection's id), or "conn: sync"; the connection must receive exactly
// want (n replies/pushes are read: the count of messages in want).
func (sc *scenario) step(line, want string) {
	sc.t.Helper()
	name, cmdline, _ := strings.Cut(line, ": ")
	w := sc.conns[name]
	if cmdline == "sync" {
		if got := w.sync(); got != want {
			sc.t.Fatalf("%s: received %q\n want %q", line, got, want)
		}
		return
	}
	args := strings.Fields(cmdline)
	for i, a := range args {
		if id, ok := sc.ids[strings.TrimPrefix(a, "$")]; ok && strings.HasPrefix(a, "$") {
			args[i] = id
		}
	}
	w.send(args...)
	if got := w.readN(countMessages(sc.t, want)); got != want {
		sc.t.Fatalf("%s: received %q\n want %q", line, got, want)
	}
}

// countMessages counts the whole RESP messages in s.
func countMessages(t *testing.T, s string) int {
	t.Helper()
	r := bufio.NewReader(strings.NewReader(s))
	n := 0
	for _, err := r.Peek(1); err == nil; _, err = r.Peek(1) {
		if _, err := readReplyBytes(r); err != nil {
			t.Fatalf("bad expected bytes %q: %v", s, err)
		}
		n++
	}
	return n
}

func forEachProfile(t *testing.T, cfg Config, f func(t *testing.T, sc *scenario)) {
	for _, p := range Profiles {
		t.Run(string(p), func(t *testing.T) {
			c := cfg
			c.Profile = p
			f(t, newScenario(t, startSim(t, c)))
		})
	}
}

// TestTrackingOptinNoloop replays the recorded OPTIN NOLOOP exchange.
func TestTrackingOptinNoloop(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		sc.conn("a", 3)
		sc.conn("b", 2)
		sc.step("b: SET k v1", ok)
		sc.step("a: CLIENT TRACKING ON OPTIN NOLOOP", ok)
		sc.step("a: CLIENT CACHING YES", ok)
		sc.step("a: GET k", "$2\r\nv1\r\n")
		sc.step("b: SET k v2", ok)
		sc.step("a: sync", inv("k"))
		sc.step("a: GET k", "$2\r\nv2\r\n") // OPTIN without CACHING YES: not tracked
		sc.step("b: SET k v3", ok)
		sc.step("a: sync", "")
		sc.step("a: SET k v4", ok) // NOLOOP; and a write does not track
		sc.step("b: DEL k", ":1\r\n")
		sc.step("a: sync", "")
		// CACHING YES lasts one command, except CLIENT subcommands.
		sc.step("a: CLIENT CACHING YES", ok)
		sc.step("a: CLIENT ID", ":"+sc.ids["a"]+"\r\n")
		sc.step("a: GET k", "_\r\n")
		sc.step("a: CLIENT CACHING YES", ok)
		sc.step("a: PING", pong)
		sc.step("a: GET k2", "_\r\n")
		sc.step("b: SET k2 x", ok)
		sc.step("b: SET k x", ok)
		sc.step("a: sync", inv("k"))
	})
}

// TestTrackingDefaultModeIsOneShotPerRead: a read key is invalidated once
// by any change of another client, then only after the next read; failed
// writes invalidate nothing; reads of missing or wrong-type keys track.
func TestTrackingDefaultModeIsOneShotPerRead(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		sc.conn("a", 3)
		sc.conn("b", 2)
		sc.step("a: CLIENT TRACKING ON", ok)
		sc.step("a: GET k", "_\r\n")
		sc.step("b: SET k v NX PX 30000", ok)
		sc.step("a: sync", inv("k"))
		sc.step("b: SET k v2", ok)
		sc.step("a: sync", "") // not read again: no longer tracked
		sc.step("a: GET k", "$2\r\nv2\r\n")
		sc.step("b: SET k v NX PX 30000", "$-1\r\n") // did not write
		sc.step("b: PEXPIRE k 100 XX", ":0\r\n")
		sc.step("b: DEL nokey", ":0\r\n")
		sc.step("a: sync", "")
		sc.step("b: PEXPIRE k 60000", ":1\r\n") // value unchanged, still invalidates
		sc.step("a: sync", inv("k"))
		sc.step("a: MGET k m1", "*2\r\n$2\r\nv2\r\n_\r\n")
		sc.step("a: EXISTS e1", ":0\r\n")
		sc.step("a: PTTL t1", ":-2\r\n")
		sc.step("b: RPUSH m1 x", ":1\r\n")
		sc.step("a: GET m1", inv("m1")+wrongTyp) // queued before the reply
		sc.step("b: INCR e1", ":1\r\n")
		sc.step("b: DEL m1 k t1", ":2\r\n")
		sc.step("a: sync", inv("e1")+inv("m1")+inv("k"))
		sc.step("a: GET k", "_\r\n")
		sc.step("a: SET k mine", ok+inv("k")) // own write: after the reply
		sc.step("a: GET k", "$4\r\nmine\r\n")
		sc.step("a: MULTI", ok)
		sc.step("a: SET k 1", "+QUEUED\r\n")
		sc.step("a: GET k", "+QUEUED\r\n")
		sc.step("a: EXEC", "*2\r\n+OK\r\n$1\r\n1\r\n"+inv("k")) // after the whole EXEC
		sc.step("b: SET k 2", ok)                               // the GET in EXEC tracked it again
		sc.step("a: sync", inv("k"))
		sc.step("a: CLIENT TRACKING OFF", ok)
		sc.step("b: SET k 3", ok)
		sc.step("a: sync", "")
	})
}

// TestTrackingWritesOfEveryKind: SET IFEQ, DELEX, DELIFEQ, scripts
// (compare-and-delete, compare-and-PEXPIRE) invalidate when they write.
func TestTrackingWritesOfEveryKind(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		sc.conn("a", 3)
		sc.conn("b", 2)
		p := sc.s.Profile()
		sc.step("a: CLIENT TRACKING ON", ok)
		sc.step("b: SET kc v", ok)
		sc.step("a: GET kc", "$1\r\nv\r\n")
		sc.conns["b"].do("EVAL", cadScript, "1", "kc", "wrong")
		sc.step("a: sync", "")
		sc.conns["b"].do("EVAL", cadScript, "1", "kc", "v")
		sc.step("a: sync", inv("kc"))
		sc.step("b: SET kx v PX 30000", ok)
		sc.step("a: GET kx", "$1\r\nv\r\n")
		sc.conns["b"].do("EVAL", capScript, "1", "kx", "v", "60000")
		sc.step("a: sync", inv("kx"))
		sc.step("a: GET kx", "$1\r\nv\r\n")
		if p != Redis70 {
			sc.step("b: SET kx w IFEQ nope", "$-1\r\n")
			sc.step("a: sync", "")
			sc.step("b: SET kx w IFEQ v PX 30000", ok)
			sc.step("a: sync", inv("kx"))
			sc.step("a: GET kx", "$1\r\nw\r\n")
		}
		switch p {
		case Redis84:
			sc.step("b: DELEX kx IFEQ w", ":1\r\n")
			sc.step("a: sync", inv("kx"))
		case Valkey90:
			sc.step("b: DELIFEQ kx w", ":1\r\n")
			sc.step("a: sync", inv("kx"))
		}
		// A script's reads track for the calling connection.
		sc.conns["a"].do("EVAL", "return redis.call('get', KEYS[1])", "1", "ks")
		sc.step("b: SET ks 1", ok)
		sc.step("a: sync", inv("ks"))
	})
}

// TestTrackingNoloopAndOwnScripts: NOLOOP hides a connection's own writes,
// scripts included, in the default mode; in BCAST mode a script's writes
// count as another client's (as on real servers), MULTI's do not.
func TestTrackingNoloopAndOwnScripts(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		a := sc.conn("a", 3)
		sc.conn("b", 2)
		sc.step("a: CLIENT TRACKING ON NOLOOP", ok)
		sc.step("a: GET k", "_\r\n")
		if got := a.do("EVAL", "return redis.call('set', KEYS[1], 'y')", "1", "k"); got != ok {
			t.Fatalf("EVAL set = %q", got)
		}
		sc.step("b: SET k z", ok)
		sc.step("a: sync", "") // the own write consumed the tracking
		sc.step("a: CLIENT TRACKING OFF", ok)
		sc.step("a: CLIENT TRACKING ON BCAST PREFIX lock: NOLOOP", ok)
		sc.step("a: SET lock:1 x", ok)
		a.send("EVAL", "return redis.call('set', KEYS[1], 'y')", "1", "lock:1")
		if got := a.readN(2); got != ok+inv("lock:1") {
			t.Fatalf("EVAL set under BCAST NOLOOP = %q", got)
		}
		sc.step("a: MULTI", ok)
		sc.step("a: SET lock:2 1", "+QUEUED\r\n")
		sc.step("a: EXEC", "*1\r\n+OK\r\n")
		sc.step("b: SET lock:2 2", ok)
		sc.step("a: sync", inv("lock:2"))
	})
}

// TestTrackingBcastPrefixes: the recorded BCAST exchange, several prefixes, one
// message per prefix per event-loop iteration (a transaction is one), the
// empty prefix, overlap errors (with the real servers' double reply).
func TestTrackingBcastPrefixes(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		sc.conn("a", 3)
		sc.conn("b", 2)
		sc.step("a: CLIENT TRACKING ON BCAST PREFIX lock: NOLOOP", ok)
		sc.step("b: SET lock:a 1", ok)
		sc.step("a: sync", inv("lock:a"))
		sc.step("b: SET other 1", ok)
		sc.step("a: sync", "")
		sc.step("a: SET lock:b 1", ok) // NOLOOP
		sc.step("a: sync", "")
		sc.step("a: CLIENT TRACKING ON BCAST PREFIX lock:x", "-ERR Prefix 'lock:x' overlaps with an existing prefix 'lock:'. Prefixes for a single client must not overlap.\r\n")
		sc.step("a: CLIENT TRACKING ON BCAST PREFIX q PREFIX z PREFIX za", "-ERR Prefix 'z' overlaps with another provided prefix 'za'. Prefixes for a single client must not overlap.\r\n"+ok)
		sc.step("a: CLIENT TRACKINGINFO", "%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*4\r\n$5\r\nlock:\r\n$1\r\nq\r\n$1\r\nz\r\n$2\r\nza\r\n")
		sc.step("b: MULTI", ok)
		for _, k := range []string{"zb", "lock:d", "lock:c", "lock:d", "qq", "x"} {
			sc.step("b: SET "+k+" 1", "+QUEUED\r\n")
		}
		sc.step("b: EXEC", "*6\r\n"+strings.Repeat(ok, 6))
		sc.step("a: sync", inv("lock:c", "lock:d")+inv("qq")+inv("zb"))
		sc.step("a: SET lock:e 1", ok+inv("lock:e")) // NOLOOP was not repeated: off now
		sc.step("a: CLIENT TRACKING OFF", ok)
		sc.step("a: CLIENT TRACKING ON BCAST", ok)
		sc.step("b: SET anything 1", ok)
		sc.step("a: sync", inv("anything"))
		sc.step("b: FLUSHALL", ok)
		sc.step("a: sync", invAll)
	})
}

// TestTrackingRedirectRESP2: the recorded REDIRECT exchange: a RESP2 connection's
// invalidations reach a connection subscribed to __redis__:invalidate;
// FLUSHALL sends a null in the tracking connection's protocol; a closed
// target makes RESP3 trackers get tracking-redir-broken.
func TestTrackingRedirectRESP2(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		sc.conn("sub", 2)
		sc.conn("r", 2)
		sc.conn("b", 2)
		sc.step("sub: SUBSCRIBE __redis__:invalidate", subInval)
		sc.step("sub: GET x", "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n")
		sc.step("r: CLIENT TRACKING ON REDIRECT 999999", "-ERR The client ID you want redirect to does not exist\r\n")
		sc.step("r: CLIENT TRACKING ON REDIRECT $sub", ok)
		sc.step("r: CLIENT GETREDIR", ":"+sc.ids["sub"]+"\r\n")
		sc.step("r: GET kr", "$-1\r\n")
		sc.step("b: DEL kr", ":0\r\n") // nothing deleted
		sc.step("b: SET kr 1", ok)
		sc.step("sub: sync", invMsg("kr"))
		sc.step("r: GET kr", "$1\r\n1\r\n")
		sc.step("r: SET kr 2", ok) // own write, redirected: not on r
		sc.step("sub: sync", invMsg("kr"))
		sc.step("b: FLUSHALL", ok)
		sc.step("sub: sync", "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n")
		sc.conns["r"].do("HELLO", "3")
		sc.step("b: FLUSHALL", ok)
		sc.step("sub: sync", "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n_\r\n")
		sc.step("r: GET kr", "_\r\n")
		sc.conns["sub"].nc.Close()
		waitGone(t, sc.s, sc.ids["sub"])
		sc.step("b: SET kr 3", ok)
		sc.step("r: sync", ">2\r\n$21\r\ntracking-redir-broken\r\n:"+sc.ids["sub"]+"\r\n")
		sc.step("r: CLIENT TRACKINGINFO", "%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$15\r\nbroken_redirect\r\n$8\r\nredirect\r\n:"+sc.ids["sub"]+"\r\n$8\r\nprefixes\r\n*0\r\n")
	})
}

// waitGone waits (at most 5 s) until the server forgot a closed connection.
func waitGone(t *testing.T, s *Server, id string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if !strings.Contains(s.Exec("CLIENT", "LIST"), "id="+id+" ") {
			return
		}
	}
	t.Fatalf("client %s still listed", id)
}
