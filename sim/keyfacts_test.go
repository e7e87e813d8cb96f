package sim

import (
	"fmt"
	"strings"
	"testing"
)

// want holds one expected reply per profile; "NIL" stands for the null
// reply of the connection's protocol ($-1 in RESP2, _ in RESP3).
type want map[Profile]string

func all(s string) want { return want{Redis70: s, Redis84: s, Valkey81: s, Valkey90: s} }

func per(r70, r84, v81, v90 string) want {
	return want{Redis70: r70, Redis84: r84, Valkey81: v81, Valkey90: v90}
}

func unk(args ...string) string {
	var b strings.Builder
	for _, a := range args[1:] {
		fmt.Fprintf(&b, "'%s' ", a)
	}
	return fmt.Sprintf("-ERR unknown command '%s', with args beginning with: %s\r\n", args[0], b.String())
}

const (
	syntaxErr = "-ERR syntax error\r\n"
	wrongTyp  = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	ok        = "+OK\r\n"
	cadScript = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
	cadSHA    = "e9f69f2beb755be68b5e456ee2ce9aadfbc4ebf4"
)

func nullBytes(proto int) string {
	if proto == 3 {
		return "_\r\n"
	}
	return "$-1\r\n"
}

// step is one command of a key-fact script and its expected reply.
type step struct {
	cmd  []string
	want want
}

func cmd(args ...string) []string { return args }

// keyFactSteps reproduces the key facts about the lock commands recorded
// from the real servers (numbered 1-13 here; 14-18 are checked by
// checkClientKillFacts and checkVersionFacts), in order, on one connection.
var keyFactSteps = []step{
	// 1: SET NX PX absent / present.
	{cmd("SET", "k", "v", "NX", "PX", "30000"), all(ok)},
	{cmd("SET", "k", "v", "NX", "PX", "30000"), all("NIL")},
	// 2: IFEQ match / mismatch / missing (missing key not created).
	{cmd("SET", "k", "new", "IFEQ", "v", "PX", "30000"), per(syntaxErr, ok, ok, ok)},
	{cmd("SET", "k", "x", "IFEQ", "v", "PX", "30000"), per(syntaxErr, "NIL", "NIL", "NIL")},
	{cmd("SET", "nokey", "x", "IFEQ", "v", "PX", "30000"), per(syntaxErr, "NIL", "NIL", "NIL")},
	{cmd("EXISTS", "nokey"), all(":0\r\n")},
	// 3: IFEQ ... GET match / mismatch / missing.
	{cmd("SET", "g", "old"), all(ok)},
	{cmd("SET", "g", "v2", "IFEQ", "old", "PX", "30000", "GET"), per(syntaxErr, "$3\r\nold\r\n", "$3\r\nold\r\n", "$3\r\nold\r\n")},
	{cmd("SET", "g", "v3", "IFEQ", "nope", "PX", "30000", "GET"), per(syntaxErr, "$2\r\nv2\r\n", "$2\r\nv2\r\n", "$2\r\nv2\r\n")},
	{cmd("SET", "gmissing", "v", "IFEQ", "v", "GET"), per(syntaxErr, "NIL", "NIL", "NIL")},
	// 4: IFEQ with NX / XX.
	{cmd("SET", "g", "v", "IFEQ", "v2", "NX"), per(syntaxErr, "NIL", syntaxErr, syntaxErr)},
	{cmd("SET", "g", "v", "IFEQ", "v2", "XX"), per(syntaxErr, ok, syntaxErr, syntaxErr)},
	// 5: IFEQ without PX clears the TTL.
	{cmd("SET", "t", "v", "PX", "30000"), all(ok)},
	{cmd("SET", "t", "v", "IFEQ", "v"), per(syntaxErr, ok, ok, ok)},
	{cmd("PTTL", "t"), per(":30000\r\n", ":-1\r\n", ":-1\r\n", ":-1\r\n")},
	// 6: IFEQ on a list.
	{cmd("RPUSH", "list", "a"), all(":1\r\n")},
	{cmd("SET", "list", "v", "IFEQ", "v"), per(syntaxErr, wrongTyp, wrongTyp, wrongTyp)},
	// 7: IFNE.
	{cmd("SET", "g", "v9", "IFNE", "zzz"), per(syntaxErr, ok, syntaxErr, syntaxErr)},
	{cmd("SET", "dg", "v"), all(ok)},
	{cmd("DIGEST", "dg"), per(unk("DIGEST", "dg"), "$16\r\nf7042be43fb80714\r\n", unk("DIGEST", "dg"), unk("DIGEST", "dg"))},
	{cmd("SET", "dg", "w", "IFDEQ", "f7042be43fb80714"), per(syntaxErr, ok, syntaxErr, syntaxErr)},
	{cmd("DELEX", "dg", "IFDEQ", "xyz"), per(unk("DELEX", "dg", "IFDEQ", "xyz"), "-ERR must be exactly 16 hexadecimal characters\r\n", unk("DELEX", "dg", "IFDEQ", "xyz"), unk("DELEX", "dg", "IFDEQ", "xyz"))},
	// 8: DELEX mismatch / match / missing.
	{cmd("SET", "d", "v"), all(ok)},
	{cmd("DELEX", "d", "IFEQ", "wrong"), per(unk("DELEX", "d", "IFEQ", "wrong"), ":0\r\n", unk("DELEX", "d", "IFEQ", "wrong"), unk("DELEX", "d", "IFEQ", "wrong"))},
	{cmd("DELEX", "d", "IFEQ", "v"), per(unk("DELEX", "d", "IFEQ", "v"), ":1\r\n", unk("DELEX", "d", "IFEQ", "v"), unk("DELEX", "d", "IFEQ", "v"))},
	{cmd("DELEX", "d", "IFEQ", "v"), per(unk("DELEX", "d", "IFEQ", "v"), ":0\r\n", unk("DELEX", "d", "IFEQ", "v"), unk("DELEX", "d", "IFEQ", "v"))},
	// 9: DELEX edge cases.
	{cmd("DELEX", "list", "IFEQ", "v"), per(unk("DELEX", "list", "IFEQ", "v"), "-ERR Key should be of string type if conditions are specified\r\n", unk("DELEX", "list", "IFEQ", "v"), unk("DELEX", "list", "IFEQ", "v"))},
	{cmd("DELEX", "d", "IFXX", "v"), per(unk("DELEX", "d", "IFXX", "v"), ":0\r\n", unk("DELEX", "d", "IFXX", "v"), unk("DELEX", "d", "IFXX", "v"))},
	{cmd("SET", "d", "v"), all(ok)},
	{cmd("DELEX", "d", "IFXX", "v"), per(unk("DELEX", "d", "IFXX", "v"), "-ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE\r\n", unk("DELEX", "d", "IFXX", "v"), unk("DELEX", "d", "IFXX", "v"))},
	{cmd("DELEX", "d", "IFEQ"), per(unk("DELEX", "d", "IFEQ"), "-ERR wrong number of arguments for 'delex' command\r\n", unk("DELEX", "d", "IFEQ"), unk("DELEX", "d", "IFEQ"))},
	{cmd("DELEX", "d", "ifeq", "v"), per(unk("DELEX", "d", "ifeq", "v"), ":1\r\n", unk("DELEX", "d", "ifeq", "v"), unk("DELEX", "d", "ifeq", "v"))},
	{cmd("DELEX", "list"), per(unk("DELEX", "list"), ":1\r\n", unk("DELEX", "list"), unk("DELEX", "list"))},
	// 10: DELIFEQ.
	{cmd("SET", "f", "v"), all(ok)},
	{cmd("DELIFEQ", "f", "wrong"), per(unk("DELIFEQ", "f", "wrong"), unk("DELIFEQ", "f", "wrong"), unk("DELIFEQ", "f", "wrong"), ":0\r\n")},
	{cmd("DELIFEQ", "f", "v"), per(unk("DELIFEQ", "f", "v"), unk("DELIFEQ", "f", "v"), unk("DELIFEQ", "f", "v"), ":1\r\n")},
	{cmd("DELIFEQ", "f", "v"), per(unk("DELIFEQ", "f", "v"), unk("DELIFEQ", "f", "v"), unk("DELIFEQ", "f", "v"), ":0\r\n")},
	{cmd("RPUSH", "list2", "a"), all(":1\r\n")},
	{cmd("DELIFEQ", "list2", "v"), per(unk("DELIFEQ", "list2", "v"), unk("DELIFEQ", "list2", "v"), unk("DELIFEQ", "list2", "v"), wrongTyp)},
	{cmd("DELIFEQ", "f"), per(unk("DELIFEQ", "f"), unk("DELIFEQ", "f"), unk("DELIFEQ", "f"), "-ERR wrong number of arguments for 'delifeq' command\r\n")},
	// 11: EVALSHA unknown.
	{cmd("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "1", "k", "v"), per(
		"-NOSCRIPT No matching script. Please use EVAL.\r\n", "-NOSCRIPT No matching script. Please use EVAL.\r\n",
		"-NOSCRIPT No matching script.\r\n", "-NOSCRIPT No matching script.\r\n")},
	{cmd("SCRIPT", "LOAD", cadScript), all("$40\r\n" + cadSHA + "\r\n")},
	// 12/13: ACL users.
	{cmd("ACL", "SETUSER", "locker", "reset", "on", ">pw", "~*", "+set", "+get", "+evalsha", "+eval", "+pexpire", "+del"), all(ok)},
	{cmd("ACL", "SETUSER", "lockernodel", "reset", "on", ">pw", "~*", "+set", "+get", "+evalsha", "+eval", "+pexpire"), all(ok)},
	{cmd("ACL", "SETUSER", "tmpu", "+delex"), per("-ERR Error in ACL SETUSER modifier '+delex': Unknown command or category name in ACL\r\n", ok,
		"-ERR Error in ACL SETUSER modifier '+delex': Unknown command or category name in ACL\r\n", "-ERR Error in ACL SETUSER modifier '+delex': Unknown command or category name in ACL\r\n")},
	{cmd("SET", "kacl", "v"), all(ok)},
	{cmd("AUTH", "locker", "bad"), all("-WRONGPASS invalid username-password pair or user is disabled.\r\n")},
	{cmd("AUTH", "locker", "pw"), all(ok)},
	{cmd("CLIENT", "ID"), per("-NOPERM this user has no permissions to run the 'client|id' command\r\n",
		"-NOPERM User locker has no permissions to run the 'client|id' command\r\n",
		"-NOPERM User locker has no permissions to run the 'client|id' command\r\n",
		"-NOPERM User locker has no permissions to run the 'client|id' command\r\n")},
	{cmd("AUTH", "lockernodel", "pw"), all(ok)},
	{cmd("EVALSHA", cadSHA, "1", "kacl", "v"), per(
		"-ERR The user executing the script can't run this command or subcommand script: "+cadSHA+", on @user_script:1.\r\n",
		"-ERR ACL failure in script: User lockernodel has no permissions to run the 'del' command script: "+cadSHA+", on @user_script:1.\r\n",
		"-ERR ACL failure in script: User lockernodel has no permissions to run the 'del' command script: "+cadSHA+", on @user_script:1.\r\n",
		"-ERR ACL failure in script: User lockernodel has no permissions to run the 'del' command script: "+cadSHA+", on @user_script:1.\r\n")},
	{cmd("EVAL", "return redis.pcall('del', KEYS[1])", "1", "kacl"), per(
		"-ERR The user executing the script can't run this command or subcommand\r\n",
		"-ERR ACL failure in script: User lockernodel has no permissions to run the 'del' command\r\n",
		"-ERR ACL failure in script: User lockernodel has no permissions to run the 'del' command\r\n",
		"-ERR ACL failure in script: User lockernodel has no permissions to run the 'del' command\r\n")},
	{cmd("GET", "kacl"), all("$1\r\nv\r\n")},
}

// TestKeyFactsPerProfile checks the recorded key facts 1-18 (keyFactSteps,
// checkClientKillFacts, checkVersionFacts) for every profile, in RESP2 and RESP3, over real sockets.
func TestKeyFactsPerProfile(t *testing.T) {
	clock := NewManualClock(testEpoch)
	for _, p := range Profiles {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/RESP%d", p, proto), func(t *testing.T) {
				s := startSim(t, Config{Profile: p, Clock: clock})
				w := dial(t, s.Addr())
				if proto == 3 {
					w.do("HELLO", "3")
				}
				for _, st := range keyFactSteps {
					exp := strings.ReplaceAll(st.want[p], "NIL", nullBytes(proto))
					if got := w.do(st.cmd...); got != exp {
						t.Errorf("%q = %q; want %q", st.cmd, got, exp)
					}
				}
				checkClientKillFacts(t, s)
				checkVersionFacts(t, s, p)
			})
		}
	}
}

// checkClientKillFacts covers facts 14-16: CLIENT KILL ID of another, an
// unknown and a malformed id; a self-kill with SKIPME yes (:0, the pipeline
// goes on) and with SKIPME no (:1, then EOF: nothing after it runs).
func checkClientKillFacts(t *testing.T, s *Server) {
	a, b := dial(t, s.Addr()), dial(t, s.Addr())
	idA := strings.TrimSuffix(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"), "\r\n")
	badID := "-ERR client-id should be greater than 0\r\n"
	if s.Profile() == Valkey81 || s.Profile() == Valkey90 {
		badID = syntaxErr
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{cmd("CLIENT", "KILL", "ID", "999999999"), ":0\r\n"},
		{cmd("CLIENT", "KILL", "ID", "abc"), badID},
		{cmd("CLIENT", "KILL", "127.0.0.1:1"), "-ERR No such client\r\n"},
	} {
		if got := b.do(c.args...); got != c.want {
			t.Errorf("%q = %q; want %q", c.args, got, c.want)
		}
	}
	// 15: own id with default SKIPME yes: :0 and pipelined commands run.
	a.nc.Write(append(append(encodeCommand("CLIENT", "KILL", "ID", idA), encodeCommand("SET", "kp", "1")...), encodeCommand("PING")...))
	for _, exp := range []string{":0\r\n", ok, "+PONG\r\n"} {
		if got := a.read(); got != exp {
			t.Errorf("self-kill SKIPME yes pipeline: got %q; want %q", got, exp)
		}
	}
	// 16: CLIENT KILL ID <self> SKIPME no: :1 then EOF; later commands not run.
	a.nc.Write(append(append(encodeCommand("CLIENT", "KILL", "ID", idA, "SKIPME", "no"), encodeCommand("SET", "kp2", "1")...), encodeCommand("PING")...))
	if got := a.read(); got != ":1\r\n" {
		t.Errorf("self-kill SKIPME no = %q; want :1", got)
	}
	if !a.eof() {
		t.Errorf("connection survived CLIENT KILL ID <self> SKIPME no")
	}
	if got := s.Exec("EXISTS", "kp2"); got != ":0\r\n" {
		t.Errorf("pipelined SET after self-kill ran: EXISTS = %q", got)
	}
	// 14: kill another connection.
	c := dial(t, s.Addr())
	idC := strings.Trim(c.do("CLIENT", "ID"), ":\r\n")
	if got := b.do("CLIENT", "KILL", "ID", idC); got != ":1\r\n" {
		t.Errorf("CLIENT KILL ID other = %q; want :1", got)
	}
	c.send("PING")
	if !c.eof() {
		t.Errorf("killed connection still answers")
	}
}

// checkVersionFacts covers facts 17 and 18: the version HELLO 3 and INFO
// server report (Valkey reports redis_version:7.2.4 besides its own).
func checkVersionFacts(t *testing.T, s *Server, p Profile) {
	w := dial(t, s.Addr())
	id := strings.Trim(w.do("CLIENT", "ID"), ":\r\n")
	server, version, modules := "redis", profileSpecs[p].version, "*0\r\n"
	if p == Valkey81 || p == Valkey90 {
		server = "valkey"
	}
	if p == Redis84 {
		modules = "*1\r\n%4\r\n$4\r\nname\r\n$9\r\nvectorset\r\n$3\r\nver\r\n:1\r\n$4\r\npath\r\n$0\r\n\r\n$4\r\nargs\r\n*0\r\n"
	}
	exp := fmt.Sprintf("%%7\r\n$6\r\nserver\r\n$%d\r\n%s\r\n$7\r\nversion\r\n$%d\r\n%s\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:%s\r\n"+
		"$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n%s",
		len(server), server, len(version), version, id, modules)
	if got := w.do("HELLO", "3"); got != exp {
		t.Errorf("HELLO 3 = %q; want %q", got, exp)
	}
	hello2 := strings.Replace(strings.Replace(exp, "%7", "*14", 1), "proto\r\n:3", "proto\r\n:2", 1)
	hello2 = strings.Replace(hello2, "*1\r\n%4", "*1\r\n*8", 1)
	if got := w.do("HELLO", "2"); got != hello2 {
		t.Errorf("HELLO 2 = %q; want %q", got, hello2)
	}
	info := w.do("INFO", "server")
	lines := map[Profile][]string{
		Redis70: {"redis_version:7.0.15\r\n"}, Redis84: {"redis_version:8.4.0\r\n"},
		Valkey81: {"redis_version:7.2.4\r\n", "server_name:valkey\r\n", "valkey_version:8.1.7\r\n"},
		Valkey90: {"redis_version:7.2.4\r\n", "server_name:valkey\r\n", "valkey_version:9.0.4\r\n"},
	}[p]
	for _, l := range lines {
		if !strings.Contains(info, l) {
			t.Errorf("INFO server = %q; want a line %q", info, l)
		}
	}
}
