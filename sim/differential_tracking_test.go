package sim

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
)

// The differential rows of client-side tracking (the exchanges recorded from
// the real servers, and more): each step runs on the simulator and on a real redis-server 7.0
// (RESPIRE_REAL_REDIS70[_PASSWORD]) and must give the same bytes.
//
// Reading is deterministic: before and after each command the connection
// runs a barrier command (CLIENT ID; PING when subscribed) and everything
// received before the barrier's reply is what the server had queued for
// it. A push caused by another connection is queued before that
// connection's reply is written, on both servers, so no read waits on
// time, except the wait for an active expiry (bounded, 5 s).

// tstep is one step of the tracking differential script.
type tstep struct {
	conn string
	args []string // "$name" is replaced by that connection's id
	kind tkind
}

type tkind int

const (
	tCmd   tkind = iota // barrier, command, its reply, barrier
	tMulti              // barrier, MULTI, its reply (a barrier would be queued)
	tOne                // command and exactly one reply (inside MULTI)
	tExec               // EXEC, its reply, barrier
	tRead               // barrier only: what the connection received
	tWait               // wait for one message (at most 5 s), then barrier
	tSleep              // args[0] milliseconds, client side
	tClose              // close the connection; wait until the server forgot it
)

func tc(conn, line string) tstep   { return tstep{conn: conn, args: strings.Fields(line)} }
func tone(conn, line string) tstep { return tstep{conn: conn, args: strings.Fields(line), kind: tOne} }
func tread(conn string) tstep      { return tstep{conn: conn, kind: tRead} }
func tmulti(conn string) tstep     { return tstep{conn: conn, args: []string{"MULTI"}, kind: tMulti} }
func texec(conn string) tstep      { return tstep{conn: conn, args: []string{"EXEC"}, kind: tExec} }

// trackingScript: "a" and "bc" speak RESP3, the others RESP2.
var trackingScript = []tstep{
	// OPTIN NOLOOP.
	tc("a", "CLIENT TRACKING ON OPTIN NOLOOP"), tc("b", "SET k v1"), tc("a", "CLIENT CACHING YES"), tc("a", "GET k"),
	tc("b", "SET k v2"), tread("a"), tc("a", "GET k"), tc("b", "SET k v3"), tread("a"),
	tc("a", "SET k v4"), tc("b", "DEL k"), tread("a"),
	// Active expiry, lazy expiry (same bytes whichever expiry wins), Lua, PEXPIRE, FLUSHALL.
	tc("b", "SET ke v PX 700"), tc("a", "CLIENT CACHING YES"), tc("a", "GET ke"), {conn: "a", kind: tWait},
	tc("b", "SET kl v PX 300"), tc("a", "CLIENT CACHING YES"), tc("a", "GET kl"), {kind: tSleep, args: []string{"400"}},
	tc("b", "EXISTS kl"), tread("a"),
	tc("b", "SET kc v"), tc("a", "CLIENT CACHING YES"), tc("a", "GET kc"), {conn: "b", args: []string{"EVAL", cadScript, "1", "kc", "v"}},
	tread("a"), tc("b", "SET kx v"), tc("a", "CLIENT CACHING YES"), tc("a", "GET kx"), tc("b", "PEXPIRE kx 60000"), tread("a"),
	tc("b", "FLUSHALL"), tread("a"), tc("a", "CLIENT TRACKING OFF"),
	// BCAST.
	tc("a", "CLIENT TRACKING ON BCAST PREFIX lock: NOLOOP"), tc("b", "SET lock:a 1"), tread("a"), tc("b", "SET other 1"), tread("a"),
	tc("a", "SET lock:b 1"), {conn: "a", args: []string{"EVAL", "return redis.call('set', KEYS[1], 'y')", "1", "lock:b"}},
	tmulti("a"), tone("a", "SET lock:c 1"), texec("a"),
	tc("a", "CLIENT TRACKING ON BCAST PREFIX q PREFIX z PREFIX za"), tc("a", "CLIENT TRACKINGINFO"),
	tmulti("b"), tone("b", "SET zb 1"), tone("b", "SET lock:d 1"), tone("b", "SET lock:c 1"), tone("b", "SET qq 1"),
	texec("b"), tread("a"), tc("a", "SET lock:e 1"), tc("a", "CLIENT TRACKING OFF"),
	// RESP2 REDIRECT to a subscriber.
	tc("r", "CLIENT TRACKING ON"), tc("sub", "SUBSCRIBE __redis__:invalidate"), tc("r", "CLIENT TRACKING ON REDIRECT $sub"),
	tc("b", "SET kr 1"), tc("r", "GET kr"), tc("b", "DEL kr"), tread("sub"), tread("r"),
	tc("r", "CLIENT TRACKING ON REDIRECT 999999"), tc("r", "GET kr"), tc("r", "SET kr 2"), tread("sub"),
	tc("b", "FLUSHALL"), tread("sub"), tc("sub", "GET x"), tc("sub", "PING hi"),
	// Default mode, own writes, MULTI, script reads.
	tc("bc", "CLIENT TRACKING ON"), tc("bc", "GET d1"), tc("bc", "MGET d2 d3"), tc("bc", "EXISTS d4"),
	tc("b", "SET d1 1 NX"), tc("b", "SET d1 1 NX"), tc("b", "DEL d2 d4"), tc("b", "RPUSH d3 x"), tread("bc"),
	tc("b", "SET d1 2"), tread("bc"), tc("bc", "GET d3"), tc("bc", "SET d3 mine"), tc("bc", "GET d3"),
	tmulti("bc"), tone("bc", "SET d3 1"), tone("bc", "GET d3"), texec("bc"), tc("b", "SET d3 2"), tread("bc"),
	{conn: "bc", args: []string{"EVAL", "return redis.call('get', KEYS[1])", "1", "d5"}}, tc("b", "SET d5 1"), tread("bc"),
	tc("bc", "FLUSHALL"), tc("bc", "CLIENT TRACKINGINFO"),
	// A RESP3 tracker redirected to a RESP2 subscriber, then to nobody.
	tc("r3", "HELLO 3"), tc("r3", "CLIENT TRACKING ON REDIRECT $sub"), tc("b", "FLUSHALL"), tread("sub"),
	tc("r3", "GET g"), {conn: "sub", kind: tClose}, tc("b", "SET g 1"), tread("r3"), tc("r3", "CLIENT TRACKINGINFO"),
	tc("r3", "GET g"), tc("b", "SET g 2"), tread("r3"), tc("r3", "CLIENT GETREDIR"),
	// Errors.
	tc("e", "CLIENT TRACKING ON REDIRECT $e REDIRECT 1"), tc("e", "CLIENT TRACKING ON PREFIX x OPTIN OPTOUT"),
	tc("e", "CLIENT TRACKING ON BCAST OPTIN OPTOUT"), tc("e", "CLIENT TRACKING ON OPTIN OPTOUT"),
	tc("e", "CLIENT TRACKING MAYBE PREFIX x"), tc("e", "CLIENT TRACKING OFF REDIRECT 999999"),
	tc("e", "CLIENT TRACKING ON REDIRECT 1x"), tc("e", "CLIENT CACHING YES"), tc("e", "CLIENT TRACKINGINFO"),
	tc("e", "CLIENT TRACKING ON"), tc("e", "CLIENT CACHING NO"), tc("e", "CLIENT TRACKING ON OPTOUT"),
	tc("e", "CLIENT TRACKING OFF"), tc("e", "CLIENT TRACKING ON OPTOUT"), tc("e", "CLIENT TRACKING ON OPTIN"),
	tc("e", "CLIENT CACHING NO"), tc("e", "CLIENT CACHING maybe"), tc("e", "CLIENT TRACKINGINFO"), tc("e", "CLIENT TRACKING ON BCAST"),
	tc("e", "CLIENT TRACKING OFF"), tc("e", "CLIENT TRACKING ON BCAST PREFIX a PREFIX b PREFIX bc"), tc("e", "CLIENT TRACKINGINFO"),
	tc("e", "CLIENT TRACKING ON BCAST PREFIX b"), tc("e", "CLIENT TRACKING ON BCAST"), tc("e", "CLIENT TRACKINGINFO"),
	// Pub/sub and NOPERM.
	tc("b", "UNSUBSCRIBE"), tc("bc", "SUBSCRIBE ch"), tc("b", "PUBLISH ch hello"), tread("bc"), tc("bc", "UNSUBSCRIBE ch nope"),
	tc("b", "ACL SETUSER nt reset on >pw ~* +get +client|id"), tc("nt", "CLIENT TRACKING ON"),
	tc("b", "ACL DELUSER nt"),
}

// trackingRun is one run of the script against one server.
type trackingRun struct {
	t        *testing.T
	addr     string
	password string
	conns    map[string]*wire
	ids      map[string]string
	getredir bool // the step is CLIENT GETREDIR: its integer reply is an id
}

// conn opens name on first use: "nt" authenticates as user nt, "a" and
// "bc" switch to RESP3.
func (tr *trackingRun) conn(name string) *wire {
	if w := tr.conns[name]; w != nil {
		return w
	}
	w := dial(tr.t, tr.addr)
	switch {
	case name == "nt":
		w.do("AUTH", "nt", "pw")
	case tr.password != "":
		w.do("AUTH", tr.password)
	}
	if name == "a" || name == "bc" {
		w.do("HELLO", "3")
	}
	tr.conns[name] = w
	tr.ids[name] = strings.Trim(w.do("CLIENT", "ID"), ":\r\n")
	return w
}

// barrier returns what name received before the reply of a barrier.
func (tr *trackingRun) barrier(name string) string {
	w := tr.conn(name)
	if name == "sub" {
		w.send("PING")
	} else {
		w.send("CLIENT", "ID")
	}
	var out strings.Builder
	for {
		m := w.read()
		if m == ":"+tr.ids[name]+"\r\n" || m == pong || m == pongSub {
			return out.String()
		}
		out.WriteString(m)
	}
}

// run plays st and returns what its connection received.
func (tr *trackingRun) run(st tstep) string {
	switch st.kind {
	case tSleep:
		d, _ := time.ParseDuration(st.args[0] + "ms")
		time.Sleep(d)
		return ""
	case tClose:
		tr.conn(st.conn).nc.Close()
		tr.waitForgotten(tr.ids[st.conn])
		return ""
	case tWait:
		return tr.conn(st.conn).read() + tr.barrier(st.conn)
	case tRead:
		return tr.barrier(st.conn)
	}
	var out string
	if st.kind == tCmd || st.kind == tMulti {
		out = tr.barrier(st.conn)
	}
	args := append([]string(nil), st.args...)
	for i, a := range args {
		if name, ok := strings.CutPrefix(a, "$"); ok && name != "" {
			tr.conn(name)
			args[i] = tr.ids[name]
		}
	}
	w := tr.conn(st.conn)
	w.send(args...)
	out += w.read()
	if st.kind == tCmd || st.kind == tExec {
		out += tr.barrier(st.conn)
	}
	return out
}

// waitForgotten waits (at most 5 s) until CLIENT LIST no longer shows id.
func (tr *trackingRun) waitForgotten(id string) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if !strings.Contains(tr.conn("b").do("CLIENT", "LIST"), "id="+id+" ") {
			return
		}
	}
	tr.t.Fatalf("%s: client %s still listed after its connection closed", tr.addr, id)
}

var redirectID = regexp.MustCompile(`(\$8\r\nredirect\r\n|\$21\r\ntracking-redir-broken\r\n|^):(\d+)\r\n`)

// normalize replaces connection ids (HELLO, TRACKINGINFO, GETREDIR,
// tracking-redir-broken) by connection names.
func (tr *trackingRun) normalize(out string) string {
	out = helloID.ReplaceAllString(out, "$$2\r\nid\r\n:<id>\r\n")
	return redirectID.ReplaceAllStringFunc(out, func(m string) string {
		sub := redirectID.FindStringSubmatch(m)
		for name, id := range tr.ids {
			if id == sub[2] && (sub[1] != "" || tr.getredir) {
				return sub[1] + ":<" + name + ">\r\n"
			}
		}
		return m
	})
}

// playTracking runs the whole script against addr.
func playTracking(t *testing.T, addr, password string) []string {
	return playTrackingSteps(t, addr, password, trackingScript)
}

// playTrackingSteps runs steps against addr and returns what each step's
// connection received.
func playTrackingSteps(t *testing.T, addr, password string, steps []tstep) []string {
	tr := &trackingRun{t: t, addr: addr, password: password, conns: map[string]*wire{}, ids: map[string]string{}}
	tr.conn("b").do("FLUSHALL")
	tr.conn("b").do("ACL", "DELUSER", "nt")
	out := make([]string, len(steps))
	for i, st := range steps {
		tr.getredir = len(st.args) == 2 && strings.EqualFold(st.args[1], "getredir")
		out[i] = tr.normalize(tr.run(st))
	}
	return out
}

// TestDifferentialTrackingAgainstRealRedis70 compares the tracking script
// byte for byte (ids aside) with the real redis 7.0 named by
// RESPIRE_REAL_REDIS70 (and _PASSWORD).
func TestDifferentialTrackingAgainstRealRedis70(t *testing.T) {
	addr := os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		t.Skip("RESPIRE_REAL_REDIS70 not set: no real redis-server 7.0 to compare with")
	}
	realserver.Lock(t, addr) // FLUSHALL, ACL users, tracking: nobody else may use it meanwhile
	password := os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
	real := playTracking(t, addr, password)
	sim := playTracking(t, startSim(t, Config{Profile: Redis70, Password: password}).Addr(), password)
	for i, st := range trackingScript {
		if sim[i] != real[i] {
			t.Errorf("step %d %s: %q:\n sim  %q\n real %q", i, st.conn, st.args, sim[i], real[i])
		}
	}
}
