package sim

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
)

func scriptCommands() map[string]*command {
	return map[string]*command{
		"eval":    {arity: -3, run: (*Engine).evalCommand, keys: scriptKeys, noScript: true},
		"evalsha": {arity: -3, run: (*Engine).evalshaCommand, keys: scriptKeys, noScript: true},
		"script":  {arity: -2, run: (*Engine).scriptCommand, sub: true, noScript: true},
	}
}

// scriptKeys returns the declared keys of EVAL/EVALSHA (none when numkeys
// is invalid: the command then fails on its own).
func scriptKeys(args []string) []string {
	n, ok := parseInt(args[2])
	if !ok || n < 0 || n > int64(len(args)-3) {
		return nil
	}
	return args[3 : 3+n]
}

func scriptSHA(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// splitScriptArgs validates numkeys and splits KEYS from ARGV.
func splitScriptArgs(args []string) (keys, argv []string, r reply) {
	n, ok := parseInt(args[2])
	switch {
	case !ok:
		return nil, nil, notInteger
	case n > int64(len(args)-3):
		return nil, nil, errReply("ERR Number of keys can't be greater than number of args")
	case n < 0:
		return nil, nil, errReply("ERR Number of keys can't be negative")
	}
	return args[3 : 3+n], args[3+n:], okReply
}

func (e *Engine) evalCommand(c *client, args []string) reply {
	keys, argv, r := splitScriptArgs(args)
	if isError(r) {
		return r
	}
	sha := scriptSHA(args[1])
	return e.runScript(c, sha, args[1], keys, argv, true)
}

func (e *Engine) evalshaCommand(c *client, args []string) reply {
	keys, argv, r := splitScriptArgs(args)
	if isError(r) {
		return r
	}
	sha := strings.ToLower(args[1])
	src, ok := e.scripts[sha]
	if !ok {
		return errReply(e.spec.noscript)
	}
	return e.runScript(c, sha, src, keys, argv, false)
}

func (e *Engine) scriptCommand(_ *client, args []string) reply {
	sub := strings.ToLower(args[1])
	switch {
	case sub == "load" && len(args) == 3:
		if r := compileCheck(args[2]); isError(r) {
			return r
		}
		sha := scriptSHA(args[2])
		e.scripts[sha] = args[2]
		return bulk(sha)
	case sub == "exists" && len(args) >= 3:
		out := make([]reply, 0, len(args)-2)
		for _, sha := range args[2:] {
			_, ok := e.scripts[strings.ToLower(sha)]
			out = append(out, integer(map[bool]int64{true: 1}[ok]))
		}
		return array(out...)
	case sub == "flush" && len(args) <= 3:
		e.scripts = map[string]string{}
		return okReply
	case sub == "kill" && len(args) == 2:
		return errReply("NOTBUSY No scripts in execution right now.")
	case sub == "load" || sub == "exists" || sub == "flush" || sub == "kill":
		return wrongArity("script|" + sub)
	}
	return errorf("ERR unknown subcommand '%.128s'. Try SCRIPT HELP.", args[1])
}

// scriptCall runs one redis.call/pcall command for the script's client.
// The error replies carry no " script: ..." suffix; redis.call adds it.
func (e *Engine) scriptCall(c *client, args []string) reply {
	if len(args) == 0 {
		return errReply("ERR Please specify at least one argument for this redis lib call")
	}
	name, cmd := e.lookupCommand(args)
	switch {
	case cmd == nil:
		return errReply(e.spec.unknownInLua)
	case cmd.noScript:
		return errReply("ERR This Redis command is not allowed from script")
	case !arityOK(cmd.arity, len(args)):
		return errReply("ERR Wrong number of args calling Redis command from script")
	}
	perm := permName(name, cmd, args)
	if !c.admin && !e.allowed(c.user, name, perm) {
		return errReply(e.spec.scriptACLFailure(c.user, perm))
	}
	if e.cluster != nil && cmd.keys != nil && !c.admin {
		for _, k := range cmd.keys(args) {
			if !e.ownsKey(k) {
				return errReply("ERR Script attempted to access a non local key in a cluster node")
			}
		}
	}
	return e.call(c, cmd, args)
}
