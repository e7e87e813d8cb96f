package sim

import (
	"maps"
	"sort"
	"strings"
)

// user is one ACL user. Key and channel patterns are accepted and ignored:
// every user may touch every key.
type user struct {
	enabled     bool
	nopass      bool
	passwords   map[string]bool
	allCommands bool
	allowed     map[string]bool // "get", "client|id"
	denied      map[string]bool // exceptions while allCommands
}

func newUser() *user {
	return &user{passwords: map[string]bool{}, allowed: map[string]bool{}, denied: map[string]bool{}}
}

func defaultUser(password string) *user {
	u := newUser()
	u.enabled, u.allCommands = true, true
	if password == "" {
		u.nopass = true
	} else {
		u.passwords[password] = true
	}
	return u
}

func (u *user) clone() *user {
	c := *u
	c.passwords, c.allowed, c.denied = maps.Clone(u.passwords), maps.Clone(u.allowed), maps.Clone(u.denied)
	return &c
}

// allowed reports whether the user may run the command name whose ACL
// permission is perm. HELLO and AUTH are always allowed.
func (e *Engine) allowed(userName, name, perm string) bool {
	if name == "hello" || name == "auth" {
		return true
	}
	u := e.users[userName]
	if u == nil || u.denied[perm] || u.denied[name] {
		return false
	}
	return u.allCommands || u.allowed[name] || u.allowed[perm]
}

func (e *Engine) authenticate(c *client, name, password string) reply {
	u := e.users[name]
	if u == nil || !u.enabled || !(u.nopass || u.passwords[password]) {
		return errReply("WRONGPASS invalid username-password pair or user is disabled.")
	}
	c.user, c.authed = name, true
	return okReply
}

// SetUser creates or replaces an enabled ACL user with one password who
// may run only the given commands ("get", "client|id", ...) on every key.
// HELLO and AUTH are always allowed (as in real servers). Safe for
// concurrent use.
func (e *Engine) SetUser(name, password string, commands ...string) {
	u := newUser()
	u.enabled = true
	u.passwords[password] = true
	for _, cmd := range commands {
		u.allowed[strings.ToLower(cmd)] = true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.users[name] = u
}

func (e *Engine) aclCommand(c *client, args []string) reply {
	switch sub := strings.ToLower(args[1]); {
	case sub == "setuser" && len(args) >= 3:
		return e.aclSetUser(args[2], args[3:])
	case sub == "deluser" && len(args) >= 3:
		return e.aclDelUser(args[2:])
	case sub == "dryrun" && len(args) >= 4:
		return e.aclDryRun(args[2], args[3:])
	case sub == "whoami" && len(args) == 2:
		return bulk(c.user)
	case sub == "users" && len(args) == 2:
		names := make([]string, 0, len(e.users))
		for n := range e.users {
			names = append(names, n)
		}
		sort.Strings(names)
		out := make([]reply, len(names))
		for i, n := range names {
			out[i] = bulk(n)
		}
		return array(out...)
	case sub == "setuser" || sub == "deluser" || sub == "dryrun" || sub == "whoami" || sub == "users":
		return wrongArity("acl|" + sub)
	}
	return errorf("ERR unknown subcommand '%.128s'. Try ACL HELP.", args[1])
}

func (e *Engine) aclSetUser(name string, rules []string) reply {
	u := newUser()
	if old := e.users[name]; old != nil {
		u = old.clone()
	}
	for _, rule := range rules {
		if r := e.applyRule(u, rule); isError(r) {
			return r
		}
	}
	e.users[name] = u
	return okReply
}

func (e *Engine) applyRule(u *user, rule string) reply {
	low := strings.ToLower(rule)
	switch {
	case low == "on":
		u.enabled = true
	case low == "off":
		u.enabled = false
	case low == "nopass":
		u.nopass, u.passwords = true, map[string]bool{}
	case low == "resetpass":
		u.nopass, u.passwords = false, map[string]bool{}
	case low == "reset":
		*u = *newUser()
	case low == "allkeys" || low == "resetkeys" || low == "allchannels" || low == "resetchannels",
		strings.HasPrefix(rule, "~"), strings.HasPrefix(rule, "%"), strings.HasPrefix(rule, "&"):
	case strings.HasPrefix(rule, ">"):
		u.passwords[rule[1:]] = true
		u.nopass = false
	case strings.HasPrefix(rule, "<"):
		delete(u.passwords, rule[1:])
	case low == "allcommands" || low == "+@all":
		u.allCommands, u.allowed, u.denied = true, map[string]bool{}, map[string]bool{}
	case low == "nocommands" || low == "-@all":
		u.allCommands, u.allowed, u.denied = false, map[string]bool{}, map[string]bool{}
	case strings.HasPrefix(low, "+@") || strings.HasPrefix(low, "-@"):
		if !aclCategories[low[2:]] {
			return errorf("ERR Error in ACL SETUSER modifier '%s': Unknown command or category name in ACL", rule)
		}
	case strings.HasPrefix(low, "+") || strings.HasPrefix(low, "-"):
		perm := low[1:]
		if !e.knownPerm(perm) {
			return errorf("ERR Error in ACL SETUSER modifier '%s': Unknown command or category name in ACL", rule)
		}
		if low[0] == '+' {
			u.allowed[perm] = true
			delete(u.denied, perm)
		} else {
			delete(u.allowed, perm)
			u.denied[perm] = true
		}
	default:
		return errorf("ERR Error in ACL SETUSER modifier '%s': Syntax error", rule)
	}
	return okReply
}

// knownPerm validates "+cmd" / "+cmd|sub" of ACL SETUSER. For commands
// without subcommands, "cmd|arg" is Redis' first-argument rule: accepted.
func (e *Engine) knownPerm(perm string) bool {
	base, sub, hasSub := strings.Cut(perm, "|")
	_, cmd := e.lookupCommand([]string{base})
	if cmd == nil || !hasSub || !cmd.sub {
		return cmd != nil
	}
	if base == "client" && sub == "setinfo" {
		return e.spec.clientSetInfo
	}
	subs, listed := aclSubcommands[base]
	return !listed || strings.Contains(" "+subs+" ", " "+sub+" ")
}

// aclSubcommands lists the subcommands ACL rules may name.
var aclSubcommands = map[string]string{
	"client":  "caching getredir help id info kill list no-evict no-touch pause reply setinfo setname getname tracking trackinginfo unblock unpause",
	"script":  "debug exists flush help kill load",
	"acl":     "cat deluser dryrun genpass getuser list load log save setuser users whoami help",
	"command": "count docs getkeys getkeysandflags help info list",
}

// aclCategories are the command categories ACL rules may name.
var aclCategories = map[string]bool{
	"all": true, "keyspace": true, "read": true, "write": true, "set": true, "sortedset": true,
	"list": true, "hash": true, "string": true, "bitmap": true, "hyperloglog": true, "geo": true,
	"stream": true, "pubsub": true, "admin": true, "fast": true, "slow": true, "blocking": true,
	"dangerous": true, "connection": true, "transaction": true, "scripting": true,
}

func (e *Engine) aclDelUser(names []string) reply {
	var n int64
	for _, name := range names {
		if name == "default" {
			return errReply("ERR The 'default' user cannot be removed")
		}
	}
	for _, name := range names {
		if e.users[name] == nil {
			continue
		}
		delete(e.users, name)
		n++
		for id, c := range e.clients {
			if c.user == name {
				e.kill(id)
			}
		}
	}
	return integer(n)
}

func (e *Engine) aclDryRun(name string, args []string) reply {
	if e.users[name] == nil {
		return errorf("ERR User '%s' not found", name)
	}
	cmdName, cmd := e.lookupCommand(args)
	if cmd == nil {
		return errorf("ERR Command '%s' not found", args[0])
	}
	perm := permName(cmdName, cmd, args)
	if e.allowed(name, cmdName, perm) {
		return okReply
	}
	return bulk("User " + name + " has no permissions to run the '" + perm + "' command")
}
