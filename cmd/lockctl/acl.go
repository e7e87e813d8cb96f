package main

import (
	"fmt"
	"slices"
	"strings"
)

// aclRules are the least-privilege ACL lines of docs/compatibility.md
// ("ACL: least-privilege users"), per server version; the test checks them
// against the document.
var aclRules = map[string]string{
	"redis-7.0":  "ACL SETUSER locker on >pw ~* +set +get +evalsha +eval +del +pexpire",
	"redis-8.4":  "ACL SETUSER locker on >pw ~* +set +get +delex",
	"valkey-8.1": "ACL SETUSER locker on >pw ~* +set +get +evalsha +eval +del",
	"valkey-9.0": "ACL SETUSER locker on >pw ~* +set +get +delifeq",
}

// managedPermissions are what managed locks add (identity and the fence).
const managedPermissions = "+client|id +client|info +client|kill"

// fencedPermissions are what a fencing-token lock adds (run --fenced: the
// fenced acquisition's script reads the lease and the counter, the
// counter's TTL, and INCRs it).
const fencedPermissions = "+evalsha +eval +pttl +incr"

// limitPermissions are what a semaphore's permits add (run --limit, and
// status of a KEY whose semaphore exists: the semaphore's scripts and the
// stored limit's ZSCORE).
const limitPermissions = "+evalsha +eval +time +pttl +pexpire +del +zadd +zrem +zremrangebyscore +zcount +zscore"

// sentinelPermissions are what a Sentinel client of the library adds on
// every data node (rule SentinelRenewalsNeedReplicaAcks: INFO replication
// when a session opens, ROLE and WAIT after each renewal and acquisition;
// rueidis and valkey-go check each primary with ROLE). They go with
// --managed: lockctl itself has no Sentinel connection, so the line is for
// the library's users.
const sentinelPermissions = "+role +wait +info"

// cmdACL is `lockctl acl`. It takes the connection options like every
// command (so that -h is never help) and connects to nothing.
func cmdACL(args []string, g *connFlags, e *env) error {
	fs := newFlagSet("lockctl acl")
	g.register(fs)
	server := fs.String("server", "", "")
	managed := fs.Bool("managed", false, "")
	fenced := fs.Bool("fenced", false, "")
	limit := fs.Bool("limit", false, "")
	sentinel := fs.Bool("sentinel", false, "")
	rest, err := parseFlags(fs, args, true)
	if err != nil {
		return flagError("lockctl acl", aclUsage, err, e)
	}
	if len(rest) > 0 {
		return usagef("acl: unexpected argument %q; see 'lockctl acl --help'", rest[0])
	}
	rule, ok := aclRules[*server]
	switch {
	case *server == "":
		return usagef("acl: missing --server (%s)", aclServers())
	case !ok:
		return usagef("acl: unknown --server %q (want %s)", *server, aclServers())
	case *sentinel && !*managed:
		return usagef("acl: --sentinel goes with --managed (a Sentinel client's sessions need identity and the fence)")
	}
	for _, add := range []struct {
		on    bool
		rules string
	}{{*managed, managedPermissions}, {*fenced, fencedPermissions}, {*limit, limitPermissions}, {*sentinel, sentinelPermissions}} {
		if add.on {
			rule = withRules(rule, add.rules)
		}
	}
	fmt.Fprintln(e.stdout, rule)
	return nil
}

// withRules appends to rule each of rules' fields it does not have yet.
func withRules(rule, rules string) string {
	have := strings.Fields(rule)
	for _, r := range strings.Fields(rules) {
		if !slices.Contains(have, r) {
			have = append(have, r)
		}
	}
	return strings.Join(have, " ")
}

// aclServers lists the versions acl knows, oldest first.
func aclServers() string {
	return strings.Join([]string{"redis-7.0", "redis-8.4", "valkey-8.1", "valkey-9.0"}, ", ")
}
