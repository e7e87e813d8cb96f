package sim

import "strings"

// command describes one server command.
type command struct {
	arity    int // >0 exact, <0 at least -arity (including the name)
	run      func(e *Engine, c *client, args []string) reply
	has      func(s profileSpec) bool // nil: every profile
	sub      bool                     // ACL permission is "name|subcommand"
	keys     func(args []string) []string
	noScript bool // refused inside EVAL
	noAuth   bool // allowed before authentication
	noQueue  bool // runs immediately inside MULTI
	readonly bool // a read: its keys are tracked for CLIENT TRACKING
}

var commands map[string]*command

func firstKey(args []string) []string { return args[1:2] }
func allKeys(args []string) []string  { return args[1:] }

func init() {
	commands = map[string]*command{}
	for name, cmd := range stringCommands() {
		commands[name] = cmd
	}
	for name, cmd := range connectionCommands() {
		commands[name] = cmd
	}
	for name, cmd := range scriptCommands() {
		commands[name] = cmd
	}
	for name, cmd := range pubsubCommands() {
		commands[name] = cmd
	}
	for name, cmd := range sortedSetCommands() {
		commands[name] = cmd
	}
	for name, cmd := range hashCommands() {
		commands[name] = cmd
	}
	commands["zrangebyscore"] = &command{arity: -4, run: (*Engine).zrangebyscoreCommand, keys: firstKey, readonly: true}
	commands["scan"] = &command{arity: -2, run: (*Engine).scanCommand, readonly: true}
	commands["acl"] = &command{arity: -2, run: (*Engine).aclCommand, sub: true, noScript: true}
	commands["cluster"] = &command{arity: -2, run: (*Engine).clusterCommand, sub: true, noScript: true}
	commands["asking"] = &command{arity: 1, run: (*Engine).askingCommand}
	commands["readonly"] = &command{arity: 1, run: clusterOnlyOK}
	commands["readwrite"] = &command{arity: 1, run: clusterOnlyOK}
}

// clusterOnlyOK answers READONLY/READWRITE: OK in cluster mode only.
func clusterOnlyOK(e *Engine, _ *client, _ []string) reply {
	if e.cluster == nil {
		return errReply("ERR This instance has cluster support disabled")
	}
	return okReply
}

// lookupCommand finds the command for args[0] in the current profile.
func (e *Engine) lookupCommand(args []string) (string, *command) {
	name := strings.ToLower(args[0])
	cmd := commands[name]
	if cmd == nil || (cmd.has != nil && !cmd.has(e.spec)) {
		return name, nil
	}
	return name, cmd
}

func arityOK(arity, n int) bool {
	if arity > 0 {
		return n == arity
	}
	return n >= -arity
}

// permName is the ACL name of a command: "get", or "client|id" for
// commands with subcommands.
func permName(name string, cmd *command, args []string) string {
	if cmd.sub && len(args) > 1 {
		return name + "|" + strings.ToLower(args[1])
	}
	return name
}

// dispatch runs one client command in the order real servers check:
// lookup, arity, authentication, ACL, cluster redirection, MULTI queueing,
// execution.
func (e *Engine) dispatch(c *client, args []string) reply {
	name, cmd := e.lookupCommand(args)
	if cmd == nil {
		c.dirty = c.dirty || c.inMulti
		return unknownCommand(args)
	}
	if !arityOK(cmd.arity, len(args)) {
		c.dirty = c.dirty || c.inMulti
		return wrongArity(name)
	}
	if !c.authed && !cmd.noAuth {
		return errReply("NOAUTH Authentication required.")
	}
	if !c.admin {
		if !e.allowed(c.user, name, permName(name, cmd, args)) {
			c.dirty = c.dirty || c.inMulti
			return e.spec.noperm(c.user, permName(name, cmd, args))
		}
		if e.cluster != nil {
			asking := c.asking
			c.asking = false
			if r, moved := e.redirect(c, name, cmd, args, asking); moved {
				return r
			}
			if name == "asking" {
				c.asking = true
				return okReply
			}
		}
	}
	if c.proto == 2 && len(c.channels) > 0 {
		if r, refused := subscribedContextError(c, permName(name, cmd, args)); refused {
			c.dirty = c.dirty || c.inMulti
			return r
		}
	}
	if c.inMulti && !cmd.noQueue {
		c.multi = append(c.multi, args)
		return status("QUEUED")
	}
	return e.call(c, cmd, args)
}

// call runs a command (from a client, a transaction or a script) and
// tracks the keys of a read for the running client.
func (e *Engine) call(c *client, cmd *command, args []string) reply {
	r := cmd.run(e, c, args)
	if cmd.readonly {
		e.rememberKeys(cmd, args)
	}
	return r
}

// parseInt parses a strict decimal integer the way Redis' string2ll does.
func parseInt(s string) (int64, bool) {
	var n int64
	neg := false
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	i := 0
	if s[0] == '-' {
		neg, i = true, 1
	}
	if i == len(s) || (s[i] == '0' && len(s) > i+1) || (neg && s[i] == '0') {
		return 0, s == "0"
	}
	var u uint64 // the magnitude: up to 2⁶³ for a negative number, as string2ll reads it
	for ; i < len(s); i++ {
		d := s[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		next := u*10 + uint64(d-'0')
		if next/10 != u {
			return 0, false
		}
		u = next
	}
	switch {
	case neg && u <= 1<<63:
		n = int64(-u) // two's complement: 2⁶³ becomes the smallest int64
	case !neg && u < 1<<63:
		n = int64(u)
	default:
		return 0, false
	}
	return n, true
}
