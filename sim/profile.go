package sim

import "fmt"

// profileSpec holds every per-version difference the simulator knows about.
// All version-specific reply texts live here.
type profileSpec struct {
	server         string // HELLO "server"
	version        string // HELLO "version"
	infoVersion    string // INFO redis_version
	valkeyVersion  string // INFO valkey_version ("" for redis)
	vectorset      bool   // HELLO lists the vectorset module
	ifeq           bool   // SET IFEQ supported
	ifeqWithNXXX   bool   // IFEQ may be combined with NX/XX (and repeated), IFNE exists
	delex          bool   // DELEX command exists
	delifeq        bool   // DELIFEQ command exists
	waitaof        bool   // WAITAOF command exists
	clientSetInfo  bool   // CLIENT SETINFO exists (7.2+)
	noscript       string // EVALSHA with an unknown sha
	unknownInLua   string // redis.call of an unknown command
	killIDBadValue string // CLIENT KILL ID <not a number>
	nopermOldStyle bool   // 7.0: "this user has no permissions..."
}

var profileSpecs = map[Profile]profileSpec{
	Redis70: {
		server: "redis", version: "7.0.15", infoVersion: "7.0.15",
		noscript:       "NOSCRIPT No matching script. Please use EVAL.",
		unknownInLua:   "ERR Unknown Redis command called from script",
		killIDBadValue: "ERR client-id should be greater than 0",
		nopermOldStyle: true,
	},
	Redis84: {
		server: "redis", version: "8.4.0", infoVersion: "8.4.0", vectorset: true,
		ifeq: true, ifeqWithNXXX: true, delex: true, waitaof: true, clientSetInfo: true,
		noscript:       "NOSCRIPT No matching script. Please use EVAL.",
		unknownInLua:   "ERR Unknown Redis command called from script",
		killIDBadValue: "ERR client-id should be greater than 0",
	},
	Valkey81: {
		server: "valkey", version: "8.1.7", infoVersion: "7.2.4", valkeyVersion: "8.1.7",
		ifeq: true, waitaof: true, clientSetInfo: true,
		noscript:       "NOSCRIPT No matching script.",
		unknownInLua:   "ERR Unknown command called from script",
		killIDBadValue: "ERR syntax error",
	},
	Valkey90: {
		server: "valkey", version: "9.0.4", infoVersion: "7.2.4", valkeyVersion: "9.0.4",
		ifeq: true, delifeq: true, waitaof: true, clientSetInfo: true,
		noscript:       "NOSCRIPT No matching script.",
		unknownInLua:   "ERR Unknown command called from script",
		killIDBadValue: "ERR syntax error",
	},
}

func specFor(p Profile) (profileSpec, error) {
	s, ok := profileSpecs[p]
	if !ok {
		return profileSpec{}, fmt.Errorf("sim: unknown profile %q", p)
	}
	return s, nil
}

// noperm is the error a user gets for a command its ACL denies.
func (s profileSpec) noperm(user, perm string) reply {
	if s.nopermOldStyle {
		return errorf("NOPERM this user has no permissions to run the '%s' command", perm)
	}
	return errorf("NOPERM User %s has no permissions to run the '%s' command", user, perm)
}

// scriptACLFailure is the error text of a redis.call/pcall the ACL denies
// (without the " script: ..." suffix that redis.call adds).
func (s profileSpec) scriptACLFailure(user, perm string) string {
	if s.nopermOldStyle {
		return "ERR The user executing the script can't run this command or subcommand"
	}
	return fmt.Sprintf("ERR ACL failure in script: User %s has no permissions to run the '%s' command", user, perm)
}

// helloNoAuth is HELLO's error for an unauthenticated client without AUTH.
func (s profileSpec) helloNoAuth() reply {
	proto := "<proto> "
	if s.nopermOldStyle {
		proto = "" // 7.0 wording
	}
	return errReply("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO " + proto +
		"AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
}

// modules is the HELLO "modules" entry.
func (s profileSpec) modules() reply {
	if !s.vectorset {
		return array()
	}
	return array(mapReply(bulk("name"), bulk("vectorset"), bulk("ver"), integer(1),
		bulk("path"), bulk(""), bulk("args"), array()))
}

// infoServer is the "# Server" section of INFO.
func (s profileSpec) infoServer(mode string, port int) string {
	t := "# Server\r\nredis_version:" + s.infoVersion + "\r\n"
	if s.valkeyVersion != "" {
		t += "server_name:valkey\r\nvalkey_version:" + s.valkeyVersion + "\r\n"
	}
	t += "redis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_mode:" + mode + "\r\n"
	t += "os:respire-sim\r\narch_bits:64\r\nmultiplexing_api:epoll\r\n"
	t += fmt.Sprintf("process_id:1\r\ntcp_port:%d\r\n", port)
	return t
}

// commandInfo is the recorded COMMAND INFO entry for the lock commands.
func (s profileSpec) commandInfo(name string) (reply, bool) {
	switch {
	case name == "delex" && s.delex:
		return raw(delexInfo2, delexInfo3), true
	case name == "delifeq" && s.delifeq:
		return raw(delifeqInfo2, delifeqInfo3), true
	}
	return reply{}, false
}

const (
	delexInfo2   = "*10\r\n$5\r\ndelex\r\n:-2\r\n*2\r\n+write\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@write\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*3\r\n+RW\r\n+delete\r\n+variable_flags\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n"
	delexInfo3   = "*10\r\n$5\r\ndelex\r\n:-2\r\n~2\r\n+write\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~3\r\n+@write\r\n+@string\r\n+@fast\r\n~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n~3\r\n+RW\r\n+delete\r\n+variable_flags\r\n$12\r\nbegin_search\r\n%2\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n%3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n~0\r\n"
	delifeqInfo2 = "*10\r\n$7\r\ndelifeq\r\n:3\r\n*2\r\n+write\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@write\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RM\r\n+delete\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n"
	delifeqInfo3 = "*10\r\n$7\r\ndelifeq\r\n:3\r\n~2\r\n+write\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~3\r\n+@write\r\n+@string\r\n+@fast\r\n~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n~2\r\n+RM\r\n+delete\r\n$12\r\nbegin_search\r\n%2\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n%3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n~0\r\n"
)
